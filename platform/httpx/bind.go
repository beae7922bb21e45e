package httpx

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
)

// BindJSON decodes the request body, which must be a single JSON value, into
// dst. Unknown fields are ignored. On failure it returns an *apperr.Error
// ready for Fail:
//
//   - 415 unsupported_media_type: Content-Type is not application/json or
//     application/*+json (parameters such as charset are allowed);
//   - 400 malformed_json: no body, invalid JSON, or data after the value;
//   - 413 payload_too_large: the body exceeds the engine's limit;
//   - 422 validation_failed: a field has the wrong JSON type, or a string
//     holds the NUL character (U+0000, which no text column can store),
//     named by its JSON path in the errors map.
//
// A request with neither a body nor a Content-Type gets the 400, since
// "a body is required" is the more useful answer.
func BindJSON(c *gin.Context, dst any) error {
	req := c.Request
	ct := req.Header.Get("Content-Type")
	if ct == "" && req.ContentLength == 0 {
		return errBodyRequired()
	}
	if !isJSONMediaType(ct) {
		return apperr.New(apperr.KindUnsupportedMediaType, "unsupported_media_type",
			"The request body must be JSON (Content-Type: application/json).")
	}
	if req.Body == nil {
		return errBodyRequired()
	}
	dec := json.NewDecoder(req.Body)
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		if field := nulField(reflect.ValueOf(dst), ""); field != "" {
			e := apperr.New(apperr.KindInvalid, "validation_failed", "The request is invalid.")
			e.Fields = map[string][]string{field: {"must not contain the NUL character (\\u0000)"}}
			return e
		}
		return nil
	case err != nil && isTooLarge(err):
		return errTooLarge(err)
	default:
		return apperr.Wrap(err, apperr.KindMalformed, "malformed_json",
			"The request body must contain a single JSON value with nothing after it.")
	}
}

// nulField returns the JSON path (dotted, as decodeError names fields) of
// the first decoded string in v that holds a NUL character, a map's member
// names included, or "".
func nulField(v reflect.Value, path string) string {
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return ""
		}
		return nulField(v.Elem(), path)
	case reflect.String:
		if strings.IndexByte(v.String(), 0) >= 0 {
			return path
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if f.Anonymous && f.Tag.Get("json") == "" {
				if p := nulField(v.Field(i), path); p != "" {
					return p
				}
				continue
			}
			if p := nulField(v.Field(i), join(name)); p != "" {
				return p
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "" // bytes (json.RawMessage): decoded later, by their owner
		}
		for i := range v.Len() {
			if p := nulField(v.Index(i), join(fmt.Sprint(i))); p != "" {
				return p
			}
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return ""
		}
		for _, k := range v.MapKeys() {
			if strings.IndexByte(k.String(), 0) >= 0 {
				// A member's name with a NUL: named with the NUL
				// written as JSON writes it, so the name is readable.
				return join(strings.ReplaceAll(k.String(), "\x00", `\u0000`))
			}
			if p := nulField(v.MapIndex(k), join(k.String())); p != "" {
				return p
			}
		}
	}
	return ""
}

// isJSONMediaType reports whether ct names JSON: application/json or a
// structured-syntax type such as application/merge-patch+json.
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return false
	}
	return mt == "application/json" ||
		(strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// decodeError maps an error from json.Decoder.Decode to an *apperr.Error.
func decodeError(err error) *apperr.Error {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		invalid   *json.InvalidUnmarshalError
	)
	switch {
	case errors.Is(err, io.EOF):
		return errBodyRequired()
	case isTooLarge(err):
		return errTooLarge(err)
	case errors.As(err, &syntaxErr):
		return apperr.Wrap(err, apperr.KindMalformed, "malformed_json",
			fmt.Sprintf("The request body is not valid JSON (syntax error at byte %d).", syntaxErr.Offset))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.Wrap(err, apperr.KindMalformed, "malformed_json",
			"The request body is not valid JSON (it ends too early).")
	case errors.As(err, &typeErr):
		want := describeJSONType(typeErr.Type)
		if typeErr.Field == "" {
			return apperr.Wrap(err, apperr.KindMalformed, "malformed_json",
				"The request body must be "+want+".")
		}
		e := apperr.Wrap(err, apperr.KindInvalid, "validation_failed", "The request is invalid.")
		e.Fields = map[string][]string{typeErr.Field: {"must be " + want}}
		return e
	case errors.As(err, &invalid):
		// dst is not a non-nil pointer: a bug in the handler, not the client.
		return apperr.Wrap(err, apperr.KindInternal, "", "")
	default:
		// Errors from a type's own UnmarshalJSON or UnmarshalText.
		return apperr.Wrap(err, apperr.KindMalformed, "malformed_json",
			"The request body could not be decoded.")
	}
}

// describeJSONType names, with an article, the JSON type that decodes into t.
func describeJSONType(t reflect.Type) string {
	if t == nil {
		return "a valid value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// Types with UnmarshalText (but not UnmarshalJSON) decode from strings.
	if reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	default:
		return "a valid value"
	}
}

// isTooLarge reports whether err comes from http.MaxBytesReader.
func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// errTooLarge is the 413 for a body cut off by http.MaxBytesReader.
func errTooLarge(err error) *apperr.Error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apperr.Wrap(err, apperr.KindTooLarge, "payload_too_large", bodyLimitMessage(mbe.Limit))
	}
	return apperr.Wrap(err, apperr.KindTooLarge, "payload_too_large", "")
}

// bodyLimitMessage tells the client the limit it went over.
func bodyLimitMessage(limit int64) string {
	return fmt.Sprintf("The request body must not exceed %d bytes.", limit)
}

// errBodyRequired is the 400 for a missing or empty body.
func errBodyRequired() *apperr.Error {
	return apperr.New(apperr.KindMalformed, "malformed_json", "A JSON request body is required.")
}
