package netrt

import (
	"reflect"
	"testing"
)

// Add adds every field of a worker's port figures: one left out is
// exported as zero whatever the stage counted (the retransmission
// budget's Limited once was), and Sum, built on it, leaves it out too.
func TestAddEveryField(t *testing.T) {
	var s1, s2 SrcPortStats
	ones(reflect.ValueOf(&s1).Elem())
	s2.Add(&s1)
	zeroFields(t, "SrcPortStats.Add", reflect.ValueOf(s2))
	var d1, d2 DstPortStats
	ones(reflect.ValueOf(&d1).Elem())
	d2.Add(&d1)
	zeroFields(t, "DstPortStats.Add", reflect.ValueOf(d2))
}

// ones sets every field of the struct v to 1 (true).
func ones(v reflect.Value) {
	for i := 0; i < v.NumField(); i++ {
		switch f := v.Field(i); f.Kind() {
		case reflect.Int:
			f.SetInt(1)
		case reflect.Uint64:
			f.SetUint(1)
		case reflect.Float64:
			f.SetFloat(1)
		case reflect.Bool:
			f.SetBool(true)
		}
	}
}

// zeroFields reports the fields of the struct v still at zero.
func zeroFields(t *testing.T, fn string, v reflect.Value) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			t.Errorf("%s leaves %s out", fn, v.Type().Field(i).Name)
		}
	}
}
