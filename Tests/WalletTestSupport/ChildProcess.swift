import Foundation

/// Where a child's stdout or stderr goes.
public enum ChildOutput {
    /// Into a pipe the test reads.
    case pipe(ChildPipe)
    /// Onto a descriptor of this process (a device, a file).
    case descriptor(Int32)
    /// Into a file, created or emptied.
    case file(String)
    /// For stderr: wherever stdout goes.
    case stdout
}

/// The read end of a pipe a child writes into. The child gets the write end as its stdout or
/// stderr, and nothing else of this process (`ChildProcess`): a reader sees the end of the output
/// when that child exits, whatever other children are still running.
public final class ChildPipe: @unchecked Sendable {
    public let fileHandleForReading: FileHandle
    fileprivate let writeEnd: Int32

    public init() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        fileHandleForReading = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        writeEnd = ends[1]
    }
}

/// A child process started with `posix_spawn`, the tests' one way to run a program (`wallet`,
/// `sqlite3`, PostgreSQL's tools). Not Foundation's `Process`: on this toolchain its `run()` reads
/// past a directory entry while it lists `/proc/self/fd` and now and then crashes the whole test
/// process (a bad pointer in `memmove`, swift-corelibs-foundation pull request 5472), and it was
/// seen to wait forever for a child that had exited.
public final class ChildProcess: @unchecked Sendable {
    public let processIdentifier: pid_t
    private let lock = NSLock()
    private var waitStatus: Int32?

    /// glibc's `posix_spawn_file_actions_addclosefrom_np`, which Swift's Glibc module does not show.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Starts `executable` (a path) with `arguments` and exactly `environment`. Its stdin is
    /// /dev/null; nothing else of this process goes along (descriptors from 3 up are closed in the
    /// child): a server started here must not hold the pipe of a `wallet` process another test is
    /// reading to its end (seen: a hung test run).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        stdout: ChildOutput? = nil, stderr: ChildOutput? = nil
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        for (output, descriptor) in [(stdout, Int32(1)), (stderr, Int32(2))] {
            switch output {
            case .pipe(let pipe)?: posix_spawn_file_actions_adddup2(&actions, pipe.writeEnd, descriptor)
            case .descriptor(let source)?: posix_spawn_file_actions_adddup2(&actions, source, descriptor)
            case .file(let path)?: posix_spawn_file_actions_addopen(&actions, descriptor, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            case .stdout?: posix_spawn_file_actions_adddup2(&actions, 1, descriptor)
            case nil: break
            }
        }
        var pipes: [ChildPipe] = []
        for case .pipe(let pipe)? in [stdout, stderr] { pipes.append(pipe) }
        // The child holds the write ends once started; the parent's copies would keep the pipes open.
        defer { for pipe in pipes { close(pipe.writeEnd) } }
        guard let closeFrom = Self.closeFrom, closeFrom(&actions, 3) == 0 else {
            throw POSIXError(.ENOSYS, description: "posix_spawn_file_actions_addclosefrom_np is missing (glibc 2.34 or later is needed)")
        }
        let argv = ([executable] + arguments).map { strdup($0) }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") }
        defer { for pointer in argv + envp { free(pointer) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv + [nil], envp + [nil])
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO, description: "cannot start \(executable)") }
        processIdentifier = pid
    }

    /// Asks the child to stop (SIGTERM), as `Process.terminate()` does.
    /// Nothing is sent to a child already reaped (`hasExited`): its pid may be another process's.
    /// Never waits for the lock, which `waitUntilExit` holds until the child exits: a caller that
    /// stops a child another task waits for must not wait for that child itself.
    public func terminate() {
        if lock.try() {
            defer { lock.unlock() }
            guard waitStatus == nil else { return }
        }
        kill(processIdentifier, SIGTERM)
    }

    public func waitUntilExit() {
        lock.lock()
        defer { lock.unlock() }
        guard waitStatus == nil else { return }
        var status: Int32 = 0
        while waitpid(processIdentifier, &status, 0) < 0, errno == EINTR {}
        waitStatus = status
    }

    /// Whether the child has exited, without waiting for it (its status is kept for
    /// `terminationStatus`).
    public var hasExited: Bool {
        lock.lock()
        defer { lock.unlock() }
        guard waitStatus == nil else { return true }
        var status: Int32 = 0
        guard waitpid(processIdentifier, &status, WNOHANG) == processIdentifier else { return false }
        waitStatus = status
        return true
    }

    /// The exit code, or the number of the signal that ended it, as `Process` answers: zero only
    /// for a child that exited with 0.
    /// `waitUntilExit` on a thread of its own: a test waiting for a child must not hold one of
    /// the concurrency pool's threads (two on a two-core machine), which every server and store
    /// of the test process shares.
    public func exited() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                self.waitUntilExit()
                continuation.resume()
            }
        }
    }

    public var terminationStatus: Int32 {
        waitUntilExit()
        let status = lock.withLock { waitStatus ?? 0 }
        return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }
}

extension POSIXError {
    fileprivate init(_ code: POSIXErrorCode, description: String) {
        self.init(code, userInfo: [NSLocalizedDescriptionKey: description])
    }
}

/// Runs blocking `work` (a child process to its end, a lazily started cluster) on a thread of its
/// own and awaits it, so that the concurrency pool's few threads (two on a two-core machine),
/// which every server, store and test of the process shares, are never held by it.
public func offPool<Result: Sendable>(_ work: @escaping @Sendable () throws -> Result) async throws -> Result {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Swift.Result { try work() }) }
    }
}
