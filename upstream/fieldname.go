package upstream

// FieldName maps a field an upstream named in its answer to a write: the
// action parameter the request body took it from (action.params.X), else
// a declared field of the resource (see Resource.FieldName); "" otherwise.
func (a *Action) FieldName(name string) string {
	if p := a.Config.ParamFor(name); p != "" {
		return p
	}
	if a.Resource != nil {
		return a.Resource.FieldName(name)
	}
	return ""
}
