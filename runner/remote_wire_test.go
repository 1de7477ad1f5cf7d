package runner

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

// setByWorker are the fields of StartParams a hand-off does not carry, because the worker sets
// them itself: a handed-over start is audited where it was asked for, and never handed on.
var setByWorker = map[string]any{"noAudit": true, "local": true}

// Every field of StartParams survives a hand-off: a field added to StartParams and not to
// startWire fails here.
func TestHandOffCarriesEveryStartField(t *testing.T) {
	typ := reflect.TypeOf(StartParams{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		var p StartParams
		v := reflect.NewAt(f.Type, unsafe.Pointer(reflect.ValueOf(&p).Elem().Field(i).UnsafeAddr())).Elem()
		setNonZero(t, f.Name, v)
		body, err := json.Marshal(remoteStart{ID: "x", Params: wireOf(p, "00-trace-span-01")})
		if err != nil {
			t.Fatal(err)
		}
		var got remoteStart
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if got.Params.TraceParent != "00-trace-span-01" {
			t.Fatalf("trace context lost on the wire: %q", got.Params.TraceParent)
		}
		out := got.Params.params()
		gv := reflect.NewAt(f.Type, unsafe.Pointer(reflect.ValueOf(&out).Elem().Field(i).UnsafeAddr())).Elem()
		if want, ok := setByWorker[f.Name]; ok {
			if !reflect.DeepEqual(gv.Interface(), want) {
				t.Errorf("field %s is %v on the worker, want %v", f.Name, gv.Interface(), want)
			}
			continue
		}
		if !reflect.DeepEqual(gv.Interface(), v.Interface()) {
			t.Errorf("StartParams.%s = %v does not survive the hand-off (worker sees %v): carry it in startWire", f.Name, v.Interface(), gv.Interface())
		}
	}
}

// setNonZero gives v a value other than its zero value.
func setNonZero(t *testing.T, name string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString("v-" + name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		setNonZero(t, name, e.Elem())
		v.Set(e)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		setNonZero(t, name, s.Index(0))
		setNonZero(t, name, s.Index(1))
		v.Set(s)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)))
			return
		}
		t.Fatalf("field %s: no test value for %s; teach setNonZero", name, v.Type())
	default:
		t.Fatalf("field %s: no test value for kind %s; teach setNonZero", name, v.Kind())
	}
}
