package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
)

// finiteJSON encodes v as indented JSON like json.MarshalIndent, except that a float
// that is NaN or infinite (a statistic of a method a run lacks, or of too few tasks:
// runs with different method sets side by side) is absent: a struct field or map entry
// holding one is left out, a slice element is null. encoding/json refuses such values.
// Everything else is encoded as encoding/json does: struct fields in order under their
// json tags, values with their own MarshalJSON by it.
func finiteJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeFinite(&buf, reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("indent: %w", err)
	}
	return out.Bytes(), nil
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// absent reports whether v is a float that JSON cannot hold.
func absent(v reflect.Value) bool {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return false
		}
		v = v.Elem()
	}
	if k := v.Kind(); k == reflect.Float32 || k == reflect.Float64 {
		f := v.Float()
		return math.IsNaN(f) || math.IsInf(f, 0)
	}
	return false
}

func encodeFinite(buf *bytes.Buffer, v reflect.Value) error {
	if !v.IsValid() {
		buf.WriteString("null")
		return nil
	}
	// What encoding/json can encode (no NaN or infinity inside) is encoded by it, with
	// all its rules; only values that hold such a float are taken apart here.
	if data, err := json.Marshal(v.Interface()); err == nil {
		buf.Write(data)
		return nil
	}
	if v.Type().Implements(marshalerType) && (v.Kind() != reflect.Pointer || !v.IsNil()) {
		data, err := json.Marshal(v.Interface())
		if err != nil {
			return err
		}
		buf.Write(data)
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return encodeFinite(buf, v.Elem())
	case reflect.Float32, reflect.Float64:
		if absent(v) {
			buf.WriteString("null")
			return nil
		}
	case reflect.Struct:
		return encodeStruct(buf, v)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			break // []byte: base64, as encoding/json
		}
		buf.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encodeFinite(buf, v.Index(i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case reflect.Map:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		// Plain maps: encoding/json sorts their keys; drop the absent entries first.
		m := reflect.MakeMap(v.Type())
		it := v.MapRange()
		for it.Next() {
			if !absent(it.Value()) {
				m.SetMapIndex(it.Key(), it.Value())
			}
		}
		keys := m.MapKeys()
		if len(keys) == 0 {
			buf.WriteString("{}")
			return nil
		}
		// Encode each value through encodeFinite, in encoding/json's key order.
		raw := reflect.MakeMap(reflect.MapOf(v.Type().Key(), reflect.TypeFor[json.RawMessage]()))
		for _, k := range keys {
			var b bytes.Buffer
			if err := encodeFinite(&b, m.MapIndex(k)); err != nil {
				return err
			}
			raw.SetMapIndex(k, reflect.ValueOf(json.RawMessage(b.Bytes())))
		}
		data, err := json.Marshal(raw.Interface())
		if err != nil {
			return err
		}
		buf.Write(data)
		return nil
	}
	data, err := json.Marshal(v.Interface())
	if err != nil {
		return err
	}
	buf.Write(data)
	return nil
}

// isEmpty is encoding/json's empty value, for omitempty.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return v.IsZero()
}

// encodeStruct writes a struct's exported fields in order under their json names
// (tags "-", omitempty and string as encoding/json; an untagged embedded struct's
// fields inline).
func encodeStruct(buf *bytes.Buffer, v reflect.Value) error {
	buf.WriteByte('{')
	n := 0
	if err := encodeFields(buf, v, &n); err != nil {
		return err
	}
	buf.WriteByte('}')
	return nil
}

func encodeFields(buf *bytes.Buffer, v reflect.Value, n *int) error {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		fv := v.Field(i)
		if sf.Anonymous && name == "" && tag != "-" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := encodeFields(buf, fv, n); err != nil {
					return err
				}
				continue
			}
		}
		if !sf.IsExported() || tag == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if absent(fv) || strings.Contains(","+opts+",", ",omitempty,") && isEmpty(fv) {
			continue
		}
		if *n > 0 {
			buf.WriteByte(',')
		}
		*n++
		key, _ := json.Marshal(name)
		buf.Write(key)
		buf.WriteByte(':')
		if strings.Contains(","+opts+",", ",string,") {
			data, err := json.Marshal(fv.Interface())
			if err != nil {
				return err
			}
			q, _ := json.Marshal(string(data))
			buf.Write(q)
			continue
		}
		if err := encodeFinite(buf, fv); err != nil {
			return fmt.Errorf("%s.%s: %w", t.Name(), sf.Name, err)
		}
	}
	return nil
}
