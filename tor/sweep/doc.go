// Package sweep is torsim's sweep file: independent cells, each a
// torsim command line, that one machine runs one after another or a
// Kubernetes indexed Job runs one per pod (deploy/kubernetes/
// torsim-sweep.yaml); and Pack, which makes a sweep self-contained for
// the pods: every file a cell names, gathered beside the sweep file in
// one directory that a ConfigMap holds, the cells' paths rewritten to
// it.
//
// Which flags name files is read from the flags themselves: the
// argument name a flag's usage back-quotes (flag.UnquoteUsage, as
// "-h" prints it) says what its value is (Kind). A new flag that
// reads a file says so in its usage, and Pack carries its file;
// torsim's tests fail for a flag that mentions a file without saying
// which kind. A file that names files in turn (a workload file) is
// bundled through the Follow its flag is given, with what it names.
//
// Nothing here is safe for concurrent use on one value; the zero File
// is an empty sweep.
package sweep
