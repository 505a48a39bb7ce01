package telemetry

import (
	"reflect"
	"testing"
)

// addSrc and addDst add every field of a worker's port figures: one
// left out is exported as zero whatever the stage counted (the
// retransmission budget's Limited once was).
func TestNetRTAddEveryField(t *testing.T) {
	var s1, s2 srcPort
	ones(reflect.ValueOf(&s1).Elem())
	addSrc(&s2, &s1)
	zeroFields(t, "addSrc", reflect.ValueOf(s2))
	var d1, d2 dstPort
	ones(reflect.ValueOf(&d1).Elem())
	addDst(&d2, &d1)
	zeroFields(t, "addDst", reflect.ValueOf(d2))
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
