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

    /// The page, its style sheet and its ES modules (`console.js` imports the others by relative
    /// paths, which resolve under `/console/`). Package.swift embeds each file named here.
    static let files: [String: (type: String, bytes: [UInt8])] = [
        "": ("text/html; charset=utf-8", PackageResources.index_html),
        "console.css": ("text/css; charset=utf-8", PackageResources.console_css),
        "console.js": (javaScript, PackageResources.console_js),
        "api.js": (javaScript, PackageResources.api_js),
        "dom.js": (javaScript, PackageResources.dom_js),
        "forms.js": (javaScript, PackageResources.forms_js),
        "page.js": (javaScript, PackageResources.page_js),
        "charts.js": (javaScript, PackageResources.charts_js),
        "players.js": (javaScript, PackageResources.players_js),
        "entitlements.js": (javaScript, PackageResources.entitlements_js),
        "support.js": (javaScript, PackageResources.support_js),
        "audit.js": (javaScript, PackageResources.audit_js),
        "admin.js": (javaScript, PackageResources.admin_js),
    ]

    /// Module scripts must be served with a JavaScript type (browsers refuse any other for them).
    static let javaScript = "text/javascript; charset=utf-8"

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
