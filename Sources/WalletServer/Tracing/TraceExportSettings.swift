import Foundation
import Logging
import Tracing

/// Where and how `wallet serve` sends traces, from `--otel-endpoint` and OpenTelemetry's standard
/// environment variables. Traces are off unless an endpoint is given.
public struct TraceExportSettings: Sendable, Equatable {
    /// The collector's base URL, as given (`http://127.0.0.1:4318`).
    public var endpoint: String
    /// Where spans are posted: the base URL's path followed by `/v1/traces`, as OTLP/HTTP asks.
    public var tracesURL: String
    /// `service.name` on every span (`OTEL_SERVICE_NAME`).
    public var serviceName: String
    /// How long one export may take, answer included (`OTEL_EXPORTER_OTLP_TIMEOUT`, milliseconds).
    public var timeout: Duration
    /// The endpoint without a user name or password, for logs.
    public var endpointForLogs: String

    /// The endpoint as an error may quote it: never its user or password (a collector's
    /// credentials), and at most 80 characters.
    static func printable(_ endpoint: String) -> String {
        if var components = URLComponents(string: endpoint) {
            components.user = nil
            components.password = nil
            if let text = components.string { return String(text.prefix(80)) }
        }
        return endpoint.contains("@") ? "(a URL that cannot be read)" : String(endpoint.prefix(80))
    }

    public static let serviceNameDefault = "creditswallet"
    /// The instrumentation scope every span is reported under.
    static let scopeName = "creditswallet"
    public static let timeoutDefault = Duration.seconds(10)
    static let timeoutMillisecondsRange = 1...60_000
    static let endpointBytesMax = 2_048
    static let serviceNameBytesMax = 255
    /// The only encoding this build can send: OTLP/HTTP with JSON bodies.
    public static let protocolName = "http/json"

    /// A setting that cannot be used, in a sentence an operator can act on.
    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    /// The settings, or nil when traces are off (no `endpointOption` and no
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`). The protocol, the service name and the timeout are read
    /// only when traces are on: they change nothing otherwise.
    public static func resolve(endpointOption: String?, environment: [String: String]) throws(Invalid) -> TraceExportSettings? {
        guard let endpoint = endpointOption ?? environment["OTEL_EXPORTER_OTLP_ENDPOINT"], !endpoint.isEmpty else { return nil }
        let source = endpointOption == nil ? "OTEL_EXPORTER_OTLP_ENDPOINT" : "--otel-endpoint"
        guard endpoint.utf8.count <= endpointBytesMax, var components = URLComponents(string: endpoint),
            let scheme = components.scheme?.lowercased(), ["http", "https"].contains(scheme), components.host?.isEmpty == false,
            components.query == nil, components.fragment == nil
        else {
            throw Invalid(description: "\(source) must be an http:// or https:// URL without a query, such as http://127.0.0.1:4318; not '\(Self.printable(endpoint))'.")
        }
        try checkProtocol(environment)
        while components.path.hasSuffix("/") { components.path.removeLast() }
        components.path += "/v1/traces"
        guard let tracesURL = components.string else {
            throw Invalid(description: "\(source) must be an http:// or https:// URL; not '\(Self.printable(endpoint))'.")
        }
        var forLogs = components
        forLogs.user = nil
        forLogs.password = nil
        forLogs.path = ""
        return TraceExportSettings(
            endpoint: endpoint, tracesURL: tracesURL, serviceName: try serviceName(environment), timeout: try timeout(environment),
            endpointForLogs: forLogs.string ?? "(unprintable)")
    }

    /// Refuses the encodings OpenTelemetry also defines but this build does not send, rather
    /// than sending the collector what it would not read.
    private static func checkProtocol(_ environment: [String: String]) throws(Invalid) {
        let name = environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] != nil ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL"
        guard let value = environment[name], !value.isEmpty, value != protocolName else { return }
        switch value {
        case "http/protobuf", "grpc":
            throw Invalid(
                description:
                    "\(name)=\(value) is not built in: only http/json is (OTLP over HTTP with JSON bodies, which a collector's OTLP/HTTP receiver reads, port 4318). Set \(name)=http/json or unset it.")
        default:
            throw Invalid(description: "\(name) must be http/json (the only protocol built in), not '\(value.prefix(40))'.")
        }
    }

    private static func serviceName(_ environment: [String: String]) throws(Invalid) -> String {
        guard let name = environment["OTEL_SERVICE_NAME"], !name.isEmpty else { return serviceNameDefault }
        guard name.utf8.count <= serviceNameBytesMax, name.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw Invalid(description: "OTEL_SERVICE_NAME must be at most \(serviceNameBytesMax) bytes of printable text.")
        }
        return name
    }

    private static func timeout(_ environment: [String: String]) throws(Invalid) -> Duration {
        let name = environment["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"] != nil ? "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT" : "OTEL_EXPORTER_OTLP_TIMEOUT"
        guard let text = environment[name], !text.isEmpty else { return timeoutDefault }
        guard let milliseconds = Int(text), timeoutMillisecondsRange.contains(milliseconds) else {
            throw Invalid(
                description:
                    "\(name) must be a whole number of milliseconds from \(timeoutMillisecondsRange.lowerBound) to \(timeoutMillisecondsRange.upperBound), not '\(text.prefix(40))'.")
        }
        return .milliseconds(milliseconds)
    }

    /// Makes `tracer` the process's tracer: `InstrumentationSystem` takes one, once per process,
    /// and the group commit's spans find it there.
    public static func bootstrap(_ tracer: WalletTracer) {
        InstrumentationSystem.bootstrap(tracer)
    }
}
