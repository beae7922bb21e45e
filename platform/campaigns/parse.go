package campaigns

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"slices"
	"strings"

	"github.com/bizmsg/platform/platform/apperr"
)

// Row is one recipient as a request gives it, before validation.
type Row struct {
	// N is the row's number: 1-based, among the data rows (a CSV header is
	// not one).
	N int
	// Phone is as given.
	Phone string
	// Variables are the template's values (nil: none given).
	Variables map[string]string
	// ClientReference is "" when not given.
	ClientReference string
	// Problem says why the row could not be read (a field of the wrong
	// JSON type, a CSV row of the wrong length); "" when it could.
	Problem string
}

// Media types of a recipients body.
const (
	mediaJSON = "application/json"
	mediaCSV  = "text/csv"
)

// DecodeRecipients reads a recipients body of media type contentType:
// JSON, an array of {phone, variables?, client_reference?}, or CSV with a
// header phone[,variable...] (a column named client_reference is the
// reference, not a variable). A JSON row it can read but whose fields are
// of the wrong kind comes back with its Problem; a body it cannot read (a
// CSV row with another number of fields than the header is one) is an
// error: 415 for another media type, 400 malformed_json or malformed_csv,
// 422 campaign_too_many_rows over MaxRowsPerRequest rows.
func DecodeRecipients(contentType string, body []byte) ([]Row, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		mt = ""
	}
	switch {
	case mt == mediaJSON || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"):
		return decodeJSON(body)
	case mt == mediaCSV:
		return decodeCSV(body)
	default:
		return nil, apperr.New(apperr.KindUnsupportedMediaType, "unsupported_media_type",
			"The recipients must be JSON (Content-Type: application/json) or CSV (Content-Type: text/csv).")
	}
}

func errTooManyRows() error {
	return apperr.Invalid(CodeTooManyRows,
		fmt.Sprintf("A request may add at most %d recipients; send the rest in further requests.", MaxRowsPerRequest))
}

// decodeJSON reads a JSON array of recipient objects.
func decodeJSON(body []byte) ([]Row, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, apperr.New(apperr.KindMalformed, "malformed_json", "A JSON request body is required.")
	}
	var items []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&items); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, apperr.Wrap(err, apperr.KindMalformed, "malformed_json",
				fmt.Sprintf("The request body is not valid JSON (syntax error at byte %d).", syntax.Offset))
		}
		return nil, apperr.Wrap(err, apperr.KindMalformed, "malformed_json",
			"The request body must be a JSON array of recipients [{\"phone\": ...}].")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, apperr.New(apperr.KindMalformed, "malformed_json",
			"The request body must contain a single JSON value with nothing after it.")
	}
	if len(items) > MaxRowsPerRequest {
		return nil, errTooManyRows()
	}
	rows := make([]Row, len(items))
	for i, item := range items {
		rows[i] = jsonRow(i+1, item)
	}
	return rows, nil
}

// jsonRow reads one recipient object; a part of the wrong type is the
// row's Problem.
func jsonRow(n int, item json.RawMessage) Row {
	row := Row{N: n}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(item, &obj); err != nil || obj == nil {
		row.Problem = "must be an object {phone, variables?, client_reference?}"
		return row
	}
	var problems []string
	str := func(name string, dst *string) {
		v, ok := obj[name]
		if !ok || isNull(v) {
			return
		}
		if err := json.Unmarshal(v, dst); err != nil {
			problems = append(problems, name+" must be a string")
		}
	}
	str("phone", &row.Phone)
	str("client_reference", &row.ClientReference)
	if v, ok := obj["variables"]; ok && !isNull(v) {
		var vars map[string]json.RawMessage
		if err := json.Unmarshal(v, &vars); err != nil {
			problems = append(problems, "variables must be an object of strings, such as {\"1\": \"Ana\"}")
		} else {
			row.Variables = make(map[string]string, len(vars))
			for name, raw := range vars {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					problems = append(problems, "variables."+name+" must be a string")
					continue
				}
				row.Variables[name] = s
			}
		}
	}
	row.Problem = strings.Join(problems, "; ")
	return row
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// referenceColumn is the CSV column that holds a recipient's
// client_reference.
const referenceColumn = "client_reference"

// decodeCSV reads a CSV body: a header phone[,name...], then one
// recipient a row. Cells are trimmed; an empty variable cell is a
// variable not given.
func decodeCSV(body []byte) ([]Row, error) {
	body = bytes.TrimPrefix(body, []byte("\uFEFF"))
	r := csv.NewReader(bytes.NewReader(body))
	// Every row has the header's number of fields (encoding/csv checks it:
	// a row of another length is a malformed body, 400, naming its line).
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, malformedCSV("The CSV body is empty: it needs a header row phone[,variable...].", nil)
	}
	if err != nil {
		return nil, malformedCSV("", err)
	}
	cols := make([]string, len(header))
	for i, h := range header {
		cols[i] = strings.TrimSpace(h)
	}
	if !strings.EqualFold(cols[0], "phone") {
		return nil, malformedCSV("The CSV header must start with the column phone.", nil)
	}
	cols[0] = "phone"
	for i, c := range cols[1:] {
		switch {
		case c == "":
			return nil, malformedCSV(fmt.Sprintf("The CSV header's column %d has no name.", i+2), nil)
		case strings.ContainsFunc(c, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return nil, malformedCSV(fmt.Sprintf("The CSV header's column %d has a control character.", i+2), nil)
		case slices.Contains(cols[:i+1], c):
			return nil, malformedCSV(fmt.Sprintf("The CSV header names the column %q twice.", c), nil)
		}
	}
	var rows []Row
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, malformedCSV("", err)
		}
		if len(rows) == MaxRowsPerRequest {
			return nil, errTooManyRows()
		}
		rows = append(rows, csvRow(len(rows)+1, cols, rec))
	}
}

// csvRow reads one data row of a CSV body with the header cols.
func csvRow(n int, cols, rec []string) Row {
	row := Row{N: n, Phone: strings.TrimSpace(rec[0])}
	for i, name := range cols[1:] {
		cell := strings.TrimSpace(rec[i+1])
		switch {
		case name == referenceColumn:
			row.ClientReference = cell
		case cell == "":
		default:
			if row.Variables == nil {
				row.Variables = make(map[string]string, len(cols)-1)
			}
			row.Variables[name] = cell
		}
	}
	return row
}

// malformedCSV is the 400 of a CSV body that cannot be read: msg, or the
// reader's error err in plain words.
func malformedCSV(msg string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg = fmt.Sprintf("The CSV body cannot be read: line %d, column %d: %v.", pe.Line, pe.Column, pe.Err)
	} else if msg == "" {
		msg = "The CSV body cannot be read."
	}
	return apperr.Wrap(err, apperr.KindMalformed, CodeMalformedCSV, msg)
}
