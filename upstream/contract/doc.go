// Package contract is what a resource's items and an action's answers are
// held to: the declared fields compiled into a JSON Schema (with a fast
// check of the schemas airlock generates, the same verdict as the
// validator's), an external OpenAPI or JSON Schema document, the
// invariants between fields, and the violations and warnings a check
// reports, each marked when a decision rests on it.
//
// It reads no upstream. It must never let a record that breaks a field a
// decision rests on pass as kept.
package contract
