import HTTPTypes

extension HTTPFields {
    /// What `self[name]` reads: the value of the fields named `name`, several joined with ", "
    /// ("; " for `Cookie`), nil when there is none. One pass, and a single field's value is
    /// returned as stored: the subscript joins through a generic lazy sequence and builds a new
    /// string every time, on each of a request's header reads.
    func value(_ name: HTTPField.Name) -> String? {
        var found: String?
        var more: [String] = []
        for field in self where field.name.canonicalName == name.canonicalName {
            if found == nil { found = field.value } else { more.append(field.value) }
        }
        guard let found, !more.isEmpty else { return found }
        return ([found] + more).joined(separator: name == .cookie ? "; " : ", ")
    }
}
