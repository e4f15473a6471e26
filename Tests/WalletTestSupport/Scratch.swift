import Foundation

/// Scratch space for the tests: one directory per test process (`wallet-scratch-<pid>` in the
/// temporary directory) holding a directory per store, CLI run or file a test writes. It is
/// removed when the process exits, and a run removes what a process that died left behind, so a
/// suite run leaves nothing in the temporary directory (before, every run left some 600
/// directories of databases there).
public enum Scratch {
    private static let prefix = "wallet-scratch-"

    /// The process's scratch directory, made on first use.
    private static let root: URL = {
        let temporary = FileManager.default.temporaryDirectory
        removeLeftovers(in: temporary)
        let root = temporary.appendingPathComponent("\(prefix)\(getpid())")
        do {
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        } catch {
            fatalError("cannot make the tests' scratch directory \(root.path): \(error)")
        }
        atexit { try? FileManager.default.removeItem(at: Scratch.root) }
        return root
    }()

    /// A new empty directory named after `label`, removed with the process's scratch.
    public static func directory(_ label: String) throws -> URL {
        let directory = root.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// A path for a new file named after `label` with `suffix` (".sqlite"), not made yet.
    public static func file(_ label: String, suffix: String) -> String {
        root.appendingPathComponent("\(label)-\(UUID().uuidString)\(suffix)").path
    }

    /// Removes the scratch directories of processes that no longer run (a crash skips `atexit`).
    /// A process is known by its pid alone: test runs that share a temporary directory across pid
    /// namespaces (containers) must give each its own `TMPDIR`.
    private static func removeLeftovers(in temporary: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for name in names where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count)), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
        }
    }
}
