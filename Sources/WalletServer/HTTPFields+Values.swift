import HTTPTypes

extension HTTPFields {
    /// The value of the fields named `name`, joined with ", " when there are several, as
    /// `self[name]` reads it (no request reads `Cookie`, which that joins with "; "). One pass,
    /// and a single field's value is returned as stored: the subscript joins through a generic
    /// lazy sequence and builds a new string every time, on each of a request's header reads.
    func value(_ name: HTTPField.Name) -> String? {
        var found: String?
        var more: [String] = []
        for field in self where field.name.canonicalName == name.canonicalName {
            if found == nil { found = field.value } else { more.append(field.value) }
        }
        guard let found, !more.isEmpty else { return found }
        return ([found] + more).joined(separator: ", ")
    }

    /// Sets the field `name` to `value` as `self[name] = value` does, appending it without a
    /// search for fields to replace when there is none (the usual case for an answer's headers).
    mutating func set(_ name: HTTPField.Name, to value: String) {
        if contains(name) {
            self[name] = value
        } else {
            append(HTTPField(name: name, value: value))
        }
    }
}
