import HTTPTypes
import Hummingbird

/// The web console for support staff, auditors and admins: static files embedded in the binary
/// (`Sources/WalletServer/Console/`), served under `/console/` with a strict Content-Security-
/// Policy. The console calls the JSON API with the signed-in key like any client: it has no
/// route of its own beyond its files, and the API checks every call.
struct ConsoleController {
    /// Scripts and styles from this origin only (no inline script or style), API calls to this
    /// origin only, no framing, no forms posted elsewhere.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    static let files: [String: (type: String, bytes: [UInt8])] = [
        "": ("text/html; charset=utf-8", PackageResources.index_html),
        "console.js": ("text/javascript; charset=utf-8", PackageResources.console_js),
        "console.css": ("text/css; charset=utf-8", PackageResources.console_css),
    ]

    func addRoutes(to router: Router<WalletRequestContext>) {
        // `/console` and `/console/` are one route here; the page names its files by absolute paths.
        router.get("/console") { _, _ in Self.file("") ?? Response(status: .notFound) }
        router.get("/console/{file}") { _, context in
            guard let name = context.parameters.get("file"), let response = Self.file(name) else {
                throw HTTPError(.notFound)
            }
            return response
        }
    }

    static func file(_ name: String) -> Response? {
        guard let file = files[name] else { return nil }
        var headers: HTTPFields = [
            .contentType: file.type, .contentSecurityPolicy: contentSecurityPolicy, .xContentTypeOptions: "nosniff", .cacheControl: "no-cache",
        ]
        // Framing is refused by the policy's frame-ancestors; no page address leaves with a request.
        if let referrerPolicy = HTTPField.Name("Referrer-Policy") { headers[referrerPolicy] = "no-referrer" }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: file.bytes)))
    }
}
