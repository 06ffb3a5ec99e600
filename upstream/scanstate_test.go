package upstream

import (
	"net/url"
	"reflect"
	"testing"
)

// TestSavedPage_KeepsEveryMemberOfThePageState: a scan resumed by another
// process stands exactly where this one stopped. Every member of
// pageState, set to a value other than its zero, comes back from the
// stored form; a member added later without a stored twin fails here.
func TestSavedPage_KeepsEveryMemberOfThePageState(t *testing.T) {
	var st pageState
	v := reflect.ValueOf(&st).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x" + v.Type().Field(i).Name)
		case reflect.Int:
			f.SetInt(int64(i + 1))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			if f.Type() == reflect.TypeFor[*url.URL]() {
				f.Set(reflect.ValueOf(&url.URL{Scheme: "https", Host: "api.example.com", Path: "/items", RawQuery: "page=2"}))
			} else {
				n := i + 100
				f.Set(reflect.ValueOf(&n))
			}
		default:
			t.Fatalf("pageState.%s has a kind (%s) this test cannot fill", v.Type().Field(i).Name, f.Kind())
		}
	}
	back, err := savePage(st).state()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Fatalf("stored and read back:\n%+v\nwant\n%+v", back, st)
	}
}
