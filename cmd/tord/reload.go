package main

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"

	"go.uber.org/zap"

	"rocetor/cmd/tord/api"
)

// liveFields are the top-level configuration fields a reload applies to
// the running switch; a change to any other needs a restart.
var liveFields = []string{"log_level", "impair", "ecn"}

// changedFields names the top-level fields (by YAML key) that differ
// between two configurations.
func changedFields(old, cur *Config) []string {
	var out []string
	ov, nv := reflect.ValueOf(old).Elem(), reflect.ValueOf(cur).Elem()
	t := ov.Type()
	for i := 0; i < t.NumField(); i++ {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		if !reflect.DeepEqual(ov.Field(i).Interface(), nv.Field(i).Interface()) {
			out = append(out, key)
		}
	}
	return out
}

// doReload re-reads the configuration as tord started (the same file and
// flags), validates it and applies what may change live: the log level,
// the impair rules and the ECN marking (each worker adopts the new
// profiles at its next loop; counters keep counting). A file that does not validate, or that changes a
// field that needs a restart, is refused whole: the running
// configuration stays.
func (a *admin) doReload() (api.Reload, error) {
	a.reloads.Lock()
	defer a.reloads.Unlock()
	if a.reload == nil {
		return api.Reload{}, errors.New("reload is not available")
	}
	cur, err := a.reload()
	if err != nil {
		return api.Reload{}, err
	}
	old := a.config()
	changed := changedFields(old, &cur)
	var restart []string
	for _, f := range changed {
		if !slices.Contains(liveFields, f) {
			restart = append(restart, f)
		}
	}
	// Ports are impaired (wrapped) only if tord started with rules;
	// adding the first rule needs a restart.
	if slices.Contains(changed, "impair") && a.sw.impair == nil && len(cur.Impair.Rules) > 0 {
		restart = append(restart, "impair (tord started without rules)")
	}
	if len(restart) > 0 {
		return api.Reload{}, fmt.Errorf("%w: %s changed; nothing was applied", errRestart, strings.Join(restart, ", "))
	}
	res := api.Reload{Applied: []string{}}
	if slices.Contains(changed, "impair") && a.sw.impair != nil {
		if err := a.sw.impair.Update(cur.Impair); err != nil {
			return api.Reload{}, err
		}
		res.Applied = append(res.Applied, "impair")
	}
	if slices.Contains(changed, "ecn") {
		egs, err := cur.EgressConfigs()
		if err != nil {
			return api.Reload{}, err
		}
		m := cur.ECN.Marking(&cur, egs)
		for _, w := range a.sw.workers {
			if err := w.SetMarking(m); err != nil {
				return api.Reload{}, err
			}
		}
		res.Applied = append(res.Applied, "ecn")
	}
	if slices.Contains(changed, "log_level") {
		if err := a.level.UnmarshalText([]byte(cur.LogLevel)); err != nil {
			return api.Reload{}, err
		}
		res.Applied = append(res.Applied, "log_level")
	}
	a.cfg.Store(&cur)
	return res, nil
}

// reloadAndLog is SIGHUP's reload.
func (a *admin) reloadAndLog() {
	res, err := a.doReload()
	if err != nil {
		a.log.Error("reload refused; the running configuration stays", zap.Error(err))
		return
	}
	a.log.Info("configuration reloaded", zap.Strings("applied", res.Applied))
}

func (a *admin) reloadHandler(w http.ResponseWriter, _ *http.Request) {
	res, err := a.doReload()
	switch {
	case errors.Is(err, errRestart):
		fail(w, http.StatusConflict, "reload refused: %v", err)
	case err != nil:
		fail(w, http.StatusBadRequest, "reload refused: %v", err)
	default:
		a.log.Info("configuration reloaded", zap.Strings("applied", res.Applied))
		reply(w, res)
	}
}

// version is the module version and VCS revision tord was built from.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}
