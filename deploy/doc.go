// Package deploy holds no code: it is the home of the files that install
// and watch tord (deploy/README.md lists them) and of the tests that hold
// them to the binaries they start.
//
// deploy_test.go builds tord and roceperf and checks that every flag the
// systemd unit, the container image, the DaemonSet and the containerlab
// lab pass is one the binary has; that every YAML and JSON file parses;
// that the capability sets of the unit, the image and the DaemonSet agree;
// and, where the tools are installed, runs promtool (rules, their unit
// tests, the scrape configuration, the dashboard's queries) and
// systemd-analyze verify, skipping with a reason otherwise.
// cmd/tord/deploy_test.go checks the configuration files and the metric
// names, labels and label values against tord's own loader and
// collectors (dataplane/metrics, tor/telemetry);
// tor/lab/netns/containerlab_test.go generates the containerlab
// lab from testbed's plan and checks it.
package deploy
