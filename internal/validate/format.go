package validate

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/joho/godotenv"
	"github.com/magiconair/properties"
	"sigs.k8s.io/yaml"

	rerollv1 "github.com/reroll/reroll/api/v1alpha1"
)

// formats are the formats a key check knows.
var formats = []rerollv1.Format{
	rerollv1.FormatJSON, rerollv1.FormatYAML, rerollv1.FormatTOML, rerollv1.FormatProperties,
	rerollv1.FormatDotenv, rerollv1.FormatPEMCertificate, rerollv1.FormatPEMPrivateKey, rerollv1.FormatURL,
}

// parsesToJSON reports whether f yields a document a schema or CEL can read.
func parsesToJSON(f rerollv1.Format) bool {
	return f == rerollv1.FormatJSON || f == rerollv1.FormatYAML || f == rerollv1.FormatTOML
}

// checkFormat parses value as f. It returns the parsed document (for JSON,
// YAML and TOML: JSON-shaped, numbers as json.Number) and "" when value is
// well formed; else a message saying what is wrong. When sensitive, the
// message quotes nothing of value: a parser's own message is reduced to a
// line or an offset.
func checkFormat(f rerollv1.Format, value []byte, now time.Time, within time.Duration, sensitive bool) (any, string) {
	switch f {
	case rerollv1.FormatJSON, rerollv1.FormatYAML, rerollv1.FormatTOML:
		doc, err := parseDocument(f, value)
		if err != nil {
			return nil, fmt.Sprintf("is not valid %s: %s", f, parseErrorMessage(err, value, sensitive))
		}
		return doc, ""
	case rerollv1.FormatProperties:
		l := properties.Loader{Encoding: properties.UTF8, DisableExpansion: true}
		if _, err := l.LoadBytes(value); err != nil {
			return nil, "is not valid Java properties" + detail(err, sensitive)
		}
	case rerollv1.FormatDotenv:
		if _, err := godotenv.UnmarshalBytes(value); err != nil {
			return nil, "is not valid dotenv" + detail(err, sensitive)
		}
	case rerollv1.FormatPEMCertificate:
		return nil, checkCertificates(value, now, within)
	case rerollv1.FormatPEMPrivateKey:
		return nil, checkPrivateKey(value)
	case rerollv1.FormatURL:
		u, err := url.Parse(strings.TrimSpace(string(value)))
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // url.Error quotes the URL
			}
			return nil, "is not a URL" + detail(err, sensitive)
		}
		if u.Scheme == "" || u.Host == "" {
			return nil, "is not an absolute URL: it needs a scheme and a host"
		}
	default:
		return nil, fmt.Sprintf("has unknown format %q", f)
	}
	return nil, ""
}

// detail is ": err" for a ConfigMap, "" for a Secret.
func detail(err error, sensitive bool) string {
	if sensitive {
		return ""
	}
	return ": " + err.Error()
}

// parseDocument parses value as JSON, YAML or TOML into a JSON-shaped
// document: maps, slices, strings, bools, nil and json.Number. YAML and
// TOML are converted to JSON first (TOML's dates become RFC 3339 strings),
// so a schema and CEL see one shape whatever the format.
func parseDocument(f rerollv1.Format, value []byte) (any, error) {
	js := value
	switch f {
	case rerollv1.FormatYAML:
		var err error
		if js, err = yaml.YAMLToJSON(value); err != nil {
			return nil, err
		}
	case rerollv1.FormatTOML:
		var m map[string]any
		if _, err := toml.NewDecoder(bytes.NewReader(value)).Decode(&m); err != nil {
			return nil, err
		}
		var err error
		if js, err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one value")
	}
	return doc, nil
}

// lineRE finds "line N" in YAML's and TOML's messages.
var lineRE = regexp.MustCompile(`line \d+`)

// parseErrorMessage says where value fails to parse: for a ConfigMap the
// parser's message (with line and column for JSON), for a Secret only the
// line or offset.
func parseErrorMessage(err error, value []byte, sensitive bool) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := position(value, se.Offset)
		if sensitive {
			return fmt.Sprintf("syntax error at line %d, column %d", line, col)
		}
		return fmt.Sprintf("%v at line %d, column %d", err, line, col)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "unexpected value type"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input"
	}
	var pe toml.ParseError
	if errors.As(err, &pe) {
		if sensitive {
			return fmt.Sprintf("syntax error at line %d", pe.Position.Line)
		}
		return fmt.Sprintf("%s at line %d", pe.Message, pe.Position.Line)
	}
	if !sensitive {
		return err.Error()
	}
	if loc := lineRE.FindString(err.Error()); loc != "" {
		return "syntax error at " + loc
	}
	return "syntax error"
}

// position turns a byte offset into a 1-based line and column.
func position(value []byte, offset int64) (line, col int) {
	if offset > int64(len(value)) {
		offset = int64(len(value))
	}
	before := value[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}

// checkCertificates reads every PEM block of value: each must be a
// CERTIFICATE that parses and is valid at now and, when within > 0, at
// now+within. It returns "" when all are, else what is wrong with the
// first that is not. The message names validity dates (public in any
// certificate), nothing else of it.
func checkCertificates(value []byte, now time.Time, within time.Duration) string {
	rest := value
	n := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		n++
		if block.Type != "CERTIFICATE" {
			return fmt.Sprintf("holds a PEM block of type %s where a CERTIFICATE is expected (block %d)", blockType(block.Type), n)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return fmt.Sprintf("holds a certificate that does not parse (block %d)", n)
		}
		switch {
		case now.Before(cert.NotBefore):
			return fmt.Sprintf("holds a certificate not valid before %s (block %d)", cert.NotBefore.UTC().Format(time.RFC3339), n)
		case !now.Before(cert.NotAfter):
			return fmt.Sprintf("holds a certificate that expired at %s (block %d)", cert.NotAfter.UTC().Format(time.RFC3339), n)
		case within > 0 && !now.Add(within).Before(cert.NotAfter):
			return fmt.Sprintf("holds a certificate that expires at %s, within %s (block %d)", cert.NotAfter.UTC().Format(time.RFC3339), within, n)
		}
	}
	if n == 0 {
		return "holds no PEM block"
	}
	return ""
}

// checkPrivateKey reads the first PEM block of value: it must be an
// unencrypted private key in PKCS #1, PKCS #8 or SEC 1.
func checkPrivateKey(value []byte) string {
	block, _ := pem.Decode(value)
	if block == nil {
		return "holds no PEM block"
	}
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		_, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "PRIVATE KEY":
		_, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		_, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return fmt.Sprintf("holds a PEM block of type %s, not an unencrypted private key (RSA PRIVATE KEY, PRIVATE KEY or EC PRIVATE KEY)", blockType(block.Type))
	}
	if err != nil {
		return fmt.Sprintf("holds a %s block that does not parse", block.Type)
	}
	return ""
}

// knownBlockTypes are PEM block types a finding may name; any other type
// is text of the value (a PEM header is free text).
var knownBlockTypes = map[string]bool{
	"CERTIFICATE": true, "CERTIFICATE REQUEST": true, "X509 CRL": true, "PUBLIC KEY": true, "RSA PUBLIC KEY": true,
	"PRIVATE KEY": true, "RSA PRIVATE KEY": true, "EC PRIVATE KEY": true, "ENCRYPTED PRIVATE KEY": true,
	"OPENSSH PRIVATE KEY": true, "DSA PRIVATE KEY": true, "EC PARAMETERS": true,
}

// blockType is a PEM block's type quoted when it is a known one, else
// "(unknown)".
func blockType(t string) string {
	if knownBlockTypes[t] {
		return fmt.Sprintf("%q", t)
	}
	return "(unknown)"
}
