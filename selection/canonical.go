package selection

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"

	"github.com/airlock-mcp/airlock/jsonvalue"
)

// Prefixes of the hashed streams; bumping one changes every digest.
const (
	selectionDomain = "airlock-selection/v1\n"
	actionDomain    = "airlock-action/v1\n"
)

// ActionDigest is sha256 over the canonical action (type and params).
func ActionDigest(a Action) (string, error) {
	params := a.Params
	if params == nil {
		params = map[string]any{}
	}
	enc, err := jsonvalue.Canonical(map[string]any{"type": a.Type, "params": params})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append([]byte(actionDomain), enc...))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Digester computes a selection digest from a header and the records in id
// order, one at a time: a million members never sit in memory at once.
type Digester struct {
	h     hash.Hash
	buf   []byte
	count int
	last  string
	err   error
}

// NewDigester starts a digest with the selection's header (everything but
// the records).
func NewDigester(s *Selection) (*Digester, error) {
	header := map[string]any{
		"v": 1, "resource": s.Resource, "environment": s.Environment, "upstream": s.Upstream, "kind": s.Kind,
		"selector": s.Selector.canonicalValue(), "action_digest": s.ActionDigest, "action_spec": s.ActionSpecDigest,
	}
	d := &Digester{h: sha256.New()}
	d.h.Write([]byte(selectionDomain))
	var err error
	if d.buf, err = jsonvalue.AppendCanonical(d.buf[:0], header); err != nil {
		return nil, err
	}
	d.buf = append(d.buf, '\n')
	d.h.Write(d.buf)
	return d, nil
}

// Add hashes one record. Records must come in ascending id order.
func (d *Digester) Add(r Record) error {
	if d.err != nil {
		return d.err
	}
	if d.count > 0 && r.ID <= d.last {
		d.err = fmt.Errorf("digest: records out of order (%q after %q)", r.ID, d.last)
		return d.err
	}
	d.last = r.ID
	d.count++
	var err error
	d.buf, err = appendRecord(d.buf[:0], &r)
	if err != nil {
		d.err = err
		return err
	}
	d.buf = append(d.buf, '\n')
	d.h.Write(d.buf)
	return nil
}

// appendRecord appends C(r.canonicalValue()) without building the map: a
// record's keys are fixed, so they are written in their byte order
// (before, disposition, id, note, restore, review, rule, version).
func appendRecord(b []byte, r *Record) ([]byte, error) {
	var err error
	b = append(b, `{"before":`...)
	if b, err = jsonvalue.AppendObject(b, r.Before); err != nil {
		return nil, err
	}
	b = append(b, `,"disposition":`...)
	b = jsonvalue.AppendString(b, r.Disposition)
	b = append(b, `,"id":`...)
	b = jsonvalue.AppendString(b, r.ID)
	b = append(b, `,"note":`...)
	b = jsonvalue.AppendString(b, r.Note)
	if len(r.Restore) > 0 {
		b = append(b, `,"restore":`...)
		if b, err = jsonvalue.AppendObject(b, r.Restore); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"review":`...)
	if b, err = jsonvalue.AppendObject(b, r.Review); err != nil {
		return nil, err
	}
	b = append(b, `,"rule":`...)
	b = strconv.AppendInt(b, int64(r.Rule), 10)
	b = append(b, `,"version":`...)
	b = jsonvalue.AppendString(b, r.Version)
	return append(b, '}'), nil
}

// Sum finishes the digest.
func (d *Digester) Sum() (string, error) {
	if d.err != nil {
		return "", d.err
	}
	d.h.Write([]byte(`{"count":` + strconv.Itoa(d.count) + "}\n"))
	return "sha256:" + hex.EncodeToString(d.h.Sum(nil)), nil
}
