package fsm

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// fillValue sets every exported field reachable from v to a non-zero value: slices and
// maps get one element, pointers a filled value. A field added to the image later is
// filled too, so a snapshot encoding that forgets it fails TestSnapshotKeepsEveryField.
func fillValue(t *testing.T, v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if v.Type() == reflect.TypeFor[metadata.Image]() && f.Name == "ConfigList" {
				continue // derived from Configs by SnapshotForm
			}
			fillValue(t, v.Field(i), path+"."+f.Name)
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillValue(t, p.Elem(), path)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillValue(t, s.Index(0), path+"[0]")
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fillValue(t, v.Index(i), path)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		e := reflect.New(v.Type().Elem()).Elem()
		fillValue(t, k, path+"{key}")
		fillValue(t, e, path+"{value}")
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x" + path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(7.5)
	default:
		t.Fatalf("%s: cannot fill a %s; teach fillValue", path, v.Kind())
	}
}

// TestSnapshotKeepsEveryField persists an image with every field set and restores it:
// the restored image must equal it field for field.
func TestSnapshotKeepsEveryField(t *testing.T) {
	var im metadata.Image
	fillValue(t, reflect.ValueOf(&im).Elem(), "Image")
	// The maps' keys must match what they index, as Apply keeps them.
	for _, b := range im.Brokers {
		im.Brokers = map[int32]*metadata.Broker{b.ID: b}
	}
	for _, tp := range im.Topics {
		im.Topics = map[string]*metadata.Topic{tp.Name: tp}
		im.TopicIDs = map[metadata.Uuid]string{tp.ID: tp.Name}
	}
	f := New()
	f.publish(&im)
	sink := persist(t, f)
	g := New()
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	got := g.Image()
	if !reflect.DeepEqual(got, &im) {
		t.Fatalf("restored image differs:\n got %+v\nwant %+v", got, &im)
	}
}

// FuzzRestore: any bytes given to Restore end in an error or an image, never a panic.
func FuzzRestore(f *testing.F) {
	fsmWith := scaleImageShaped(f, 20, 10, 1)
	f.Add(persist(f, fsmWith).Bytes())
	f.Add([]byte(`{"version":1,"image":{"topics":{"t":null},"configs":[{"resource":{"type":2,"name":"t"},"name":"a","value":"b"}]}}`))
	f.Add([]byte(`{"version":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g := New()
		if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err == nil && g.Image() == nil {
			t.Fatal("restored no image without an error")
		}
	})
}
