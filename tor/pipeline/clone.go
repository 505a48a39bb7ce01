package pipeline

import "reflect"

// Clone returns a deep copy of c: no list, map or section of the copy is
// shared with c, so either may be changed without the other (as the
// simulator completes a switch's configuration it was given).
func (c *Config) Clone() Config {
	return deepCopy(reflect.ValueOf(*c)).Interface().(Config)
}

// deepCopy copies v and everything it points to. The configuration's
// values are trees (no cycles, no shared parts that must stay shared).
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(deepCopy(v.Elem()))
		return p
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			s.Index(i).Set(deepCopy(v.Index(i)))
		}
		return s
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			m.SetMapIndex(deepCopy(it.Key()), deepCopy(it.Value()))
		}
		return m
	case reflect.Struct:
		s := reflect.New(v.Type()).Elem()
		s.Set(v) // unexported fields (netip.Prefix's) as they are: values
		for i := range v.NumField() {
			if s.Field(i).CanSet() {
				s.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return s
	}
	return v
}
