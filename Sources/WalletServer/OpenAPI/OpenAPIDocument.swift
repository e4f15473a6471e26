/// The OpenAPI 3.1 description of every route, served at `/openapi.json`. The document is the file
/// `openapi.json` beside this one, edited, linted and diffed as JSON and embedded in the binary at
/// build time (`.embedInCode`, as the console's files are), so nothing is read from disk at run time.
/// `OpenAPITests` holds it to the router's routes and request bodies, to every problem code the server
/// can answer, to the limits the server enforces and to Core's kinds and statuses; CI fuzzes the
/// running server against it with schemathesis.
enum OpenAPIDocument {
    /// The document's bytes, exactly as in the file.
    static let bytes: [UInt8] = PackageResources.openapi_json

    /// The document as text, for tests that read it.
    static var json: String { String(decoding: bytes, as: UTF8.self) }
}
