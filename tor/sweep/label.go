package sweep

import (
	"slices"
	"strconv"
	"strings"
)

// NaturalCompare orders strings as people number things: runs of
// digits by their value, so that cell-9 comes before cell-10; the rest
// byte by byte. It suits slices.SortFunc.
func NaturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na := strings.TrimLeft(a[:da], "0")
			nb := strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) - len(nb)
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// items splits a command line ("torsim --topo chain --load=0.5 --quiet")
// into its flags as name=value ("topo=chain", "load=0.5", "quiet"),
// leaving out the program's name. A flag followed by a word that is not
// a flag takes it as its value.
func items(command string) []string {
	f := strings.Fields(command)
	var out []string
	for i := 0; i < len(f); i++ {
		if !strings.HasPrefix(f[i], "-") {
			continue
		}
		it := strings.TrimLeft(f[i], "-")
		if !strings.Contains(it, "=") && i+1 < len(f) && !strings.HasPrefix(f[i+1], "-") {
			it += "=" + f[i+1]
			i++
		}
		out = append(out, it)
	}
	return out
}

// FlagValue returns the value the command line gives flag name (the
// last, if several), parsed as a number; ok is false without one.
func FlagValue(command, name string) (v float64, ok bool) {
	for _, it := range items(command) {
		if k, s, _ := strings.Cut(it, "="); k == name {
			if x, err := strconv.ParseFloat(s, 64); err == nil {
				v, ok = x, true
			}
		}
	}
	return v, ok
}

// Labels names each command line by the flags in which it differs from
// the others ("transport=irn cc=dcqcn"), leaving out the flags in drop;
// commands that differ in nothing else get "".
func Labels(commands []string, drop ...string) []string {
	count := map[string]int{}
	per := make([][]string, len(commands))
	for i, c := range commands {
		seen := map[string]bool{}
		for _, it := range items(c) {
			k, _, _ := strings.Cut(it, "=")
			if slices.Contains(drop, k) || seen[it] {
				continue
			}
			seen[it] = true
			per[i] = append(per[i], it)
			count[it]++
		}
	}
	out := make([]string, len(commands))
	for i, its := range per {
		var d []string
		for _, it := range its {
			if count[it] < len(commands) {
				d = append(d, it)
			}
		}
		out[i] = strings.Join(d, " ")
	}
	return out
}
