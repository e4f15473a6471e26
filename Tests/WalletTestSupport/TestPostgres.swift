import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The stores the ledger suites run against. PostgreSQL runs when `WALLET_TEST_POSTGRES_URL`
/// names a server (a user that may create databases), or when PostgreSQL's binaries are
/// installed: then a private throwaway cluster is started for the test process. With
/// `CI=true`, PostgreSQL is always in the list: a machine without it fails instead of skipping.
public enum TestBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    public var description: String { rawValue }

    public static var all: [TestBackend] {
        TestPostgres.available || ProcessInfo.processInfo.environment["CI"] == "true" ? [.sqlite, .postgres] : [.sqlite]
    }
}

/// A PostgreSQL server for tests, and a fresh database on it for each test that asks.
public enum TestPostgres {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Whether PostgreSQL can be used: a URL is given, or the binaries are installed.
    public static var available: Bool {
        ProcessInfo.processInfo.environment["WALLET_TEST_POSTGRES_URL"] != nil || binaries != nil
    }

    /// A new, empty database, as a `postgres://` URL.
    public static func freshDatabase() async throws -> String {
        try await offPool {
            let server = try cluster.get()
            let name = "wallet_test_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
            try run(psql(), ["--no-psqlrc", "-v", "ON_ERROR_STOP=1", "-q", "-d", server.adminURL, "-c", "CREATE DATABASE \(name)"])
            return server.url(database: name)
        }
    }

    /// The admin URL of the server (its `postgres` database).
    public static func adminURL() async throws -> String { try await offPool { try cluster.get().adminURL } }

    struct Server: Sendable {
        /// `postgres://user[:password]@host:port` without a database.
        let base: String
        var adminURL: String { base + "/postgres" }
        func url(database: String) -> String { base + "/" + database + "?sslmode=disable" }
    }

    /// PostgreSQL's binary directory (`/usr/lib/postgresql/<version>/bin`, newest first).
    static let binaries: String? = {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.compactMap(Int.init).sorted(by: >).map { "\(root)/\($0)/bin" }
            .first { FileManager.default.isExecutableFile(atPath: "\($0)/initdb") }
    }()

    static func psql() throws -> String {
        if let binaries, FileManager.default.isExecutableFile(atPath: "\(binaries)/psql") { return "\(binaries)/psql" }
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/psql") { return "/usr/bin/psql" }
        throw Failure(description: "psql is not installed (Debian: apt-get install postgresql)")
    }

    /// The server, started once per process.
    private static let cluster: Result<Server, Failure> = {
        if let url = ProcessInfo.processInfo.environment["WALLET_TEST_POSTGRES_URL"] {
            guard let components = URLComponents(string: url), let host = components.host else {
                return .failure(Failure(description: "WALLET_TEST_POSTGRES_URL is not a postgres:// URL"))
            }
            let credentials = [components.percentEncodedUser, components.percentEncodedPassword].compactMap { $0 }.joined(separator: ":")
            return .success(Server(base: "postgres://\(credentials)@\(host):\(components.port ?? 5432)"))
        }
        do {
            return .success(Server(base: try Cluster().base))
        } catch let failure as Failure {
            return .failure(failure)
        } catch {
            return .failure(Failure(description: "\(error)"))
        }
    }()

    /// The clusters this process started, stopped and removed when it exits.
    private static let started = Mutex<[String]>([])
    private static let cleanup: Void = {
        atexit {
            for directory in TestPostgres.started.withLock({ $0 }) {
                try? TestPostgres.cluster(directory: directory, "pg_ctl", ["-D", "\(directory)/data", "-m", "immediate", "stop"])
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
    }()

    /// Runs one of PostgreSQL's programs; as root, as the `postgres` user that owns the cluster.
    fileprivate static func cluster(directory: String, _ tool: String, _ arguments: [String]) throws {
        guard let binaries else { throw Failure(description: "PostgreSQL is not installed (Debian: apt-get install postgresql) and WALLET_TEST_POSTGRES_URL is not set") }
        if getuid() == 0 {
            try run("/usr/sbin/runuser", ["-u", "postgres", "--", "\(binaries)/\(tool)"] + arguments)
        } else {
            try run("\(binaries)/\(tool)", arguments)
        }
    }

    /// A private throwaway cluster: `initdb` into a temporary directory, then `pg_ctl start` on
    /// a free port of 127.0.0.1 and a socket in that directory. `initdb` refuses root: as root,
    /// the cluster belongs to the `postgres` system user. A test that stops, restarts or freezes a
    /// server makes a cluster of its own (never the shared one: other tests of the process run
    /// on it at the same time) and removes it at its end.
    public final class Cluster: Sendable {
        let directory: String
        let port: Int
        /// `postgres://wallet@127.0.0.1:<port>`, without a database.
        public let base: String

        public init() throws {
            _ = TestPostgres.cleanup
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("wallet-pg-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            if getuid() == 0 {
                guard let user = getpwnam("postgres") else { throw Failure(description: "running as root, but there is no 'postgres' user to own the cluster") }
                chown(directory, user.pointee.pw_uid, user.pointee.pw_gid)
            }
            try TestPostgres.cluster(directory: directory, "initdb", ["-D", "\(directory)/data", "-U", "wallet", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"])
            port = try LoopbackSocket.freePort()
            base = "postgres://wallet@127.0.0.1:\(port)"
            TestPostgres.started.withLock { $0.append(directory) }
            try start()
        }

        /// Starts the server (again) and waits until it accepts connections.
        public func start() throws {
            // Durability is not under test here: fsync off keeps the suites fast.
            let settings = "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c max_connections=1000 -c fsync=off -c full_page_writes=off"
            try TestPostgres.cluster(directory: directory, "pg_ctl", ["-D", "\(directory)/data", "-l", "\(directory)/server.log", "-o", settings, "-w", "start"])
        }

        /// Stops the server at once, as a crash or a failover would.
        public func stop() throws {
            try TestPostgres.cluster(directory: directory, "pg_ctl", ["-D", "\(directory)/data", "-m", "immediate", "-w", "stop"])
        }

        /// Stops the server as a crash (`.immediate`) or an orderly restart (`.fast`, which
        /// ends every session) would, then starts it again on the same port and data.
        public func restart(_ mode: StopMode = .immediate) throws {
            try TestPostgres.cluster(directory: directory, "pg_ctl", ["-D", "\(directory)/data", "-m", mode.rawValue, "-w", "stop"])
            try start()
        }

        /// How `restart` stops the server.
        public enum StopMode: String, Sendable {
            case fast, immediate
        }

        /// Freezes every process of the server (SIGSTOP): connections stay open and statements
        /// are never answered, as when a server hangs or the network drops packets without a
        /// reset. `thaw` lets it go on.
        public func freeze() throws {
            try signalServer(SIGSTOP)
        }

        /// Resumes a frozen server (SIGCONT).
        public func thaw() throws {
            try signalServer(SIGCONT)
        }

        /// Sends `signal` to the postmaster (its pid is the first line of postmaster.pid) and to
        /// every process it started.
        private func signalServer(_ signal: Int32) throws {
            guard let text = try? String(contentsOfFile: "\(directory)/data/postmaster.pid", encoding: .utf8),
                let first = text.split(separator: "\n").first, let postmaster = pid_t(first)
            else { throw Failure(description: "the cluster at \(directory) is not running") }
            let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            for name in processes {
                guard let pid = pid_t(name), let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8) else { continue }
                // The fields after the command name (in parentheses, which may hold spaces): state, ppid.
                let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
                if fields.count > 1, pid_t(fields[1]) == postmaster { kill(pid, signal) }
            }
            guard kill(postmaster, signal) == 0 else { throw Failure(description: "cannot signal the postmaster \(postmaster): errno \(errno)") }
        }

        /// Stops the server (thawed first, if frozen) and removes its directory: the end of a
        /// cluster a test owns.
        public func remove() {
            try? thaw()
            try? stop()
            try? FileManager.default.removeItem(atPath: directory)
            TestPostgres.started.withLock { $0.removeAll { $0 == directory } }
        }

        /// A new, empty database on this cluster, as a `postgres://` URL.
        public func freshDatabase(_ name: String = "wallet") async throws -> String {
            let admin = base + "/postgres"
            try await offPool { try TestPostgres.run(psql(), ["--no-psqlrc", "-v", "ON_ERROR_STOP=1", "-q", "-d", admin, "-c", "CREATE DATABASE \(name)"]) }
            return base + "/" + name + "?sslmode=disable"
        }

        /// A new cluster (`init`), made on a thread of its own: initdb takes seconds.
        public static func make() async throws -> Cluster { try await offPool { try Cluster() } }
    }

    /// Runs a program to its end, its output in a temporary file; a non-zero exit is a failure
    /// carrying that output.
    static func run(_ executable: String, _ arguments: [String]) throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("wallet-pg-run-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let child: ChildProcess
        do {
            child = try ChildProcess(executable, arguments, stdout: .file(log), stderr: .stdout)
        } catch {
            throw Failure(description: "cannot start \(executable): \(error)")
        }
        let status = child.terminationStatus
        guard status == 0 else {
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw Failure(description: "\(URL(fileURLWithPath: executable).lastPathComponent) failed (status \(status)): \(output.prefix(2_000))")
        }
    }
}
