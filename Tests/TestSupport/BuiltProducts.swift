import Foundation

/// The package's built executables, for tests that run them as processes.
public enum BuiltProducts {
    /// Where they are: `APPSTORE_BIN_DIR` when set (`swift build --show-bin-path`), else the directory
    /// of the running test binary when it holds them (so any `--scratch-path` works), else `.build/debug`.
    public static var directory: URL {
        if let dir = ProcessInfo.processInfo.environment["APPSTORE_BIN_DIR"] { return URL(fileURLWithPath: dir) }
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
            // On Linux the test binary is `<bin>/<Package>PackageTests.xctest`; on macOS it sits inside that bundle.
            while ["MacOS", "Contents"].contains(dir.lastPathComponent) || dir.lastPathComponent.hasSuffix(".xctest") {
                dir.deleteLastPathComponent()
            }
            if FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("appstorectl").path) { return dir }
        }
        return TestServices.repositoryRoot.appendingPathComponent(".build/debug")
    }

    /// The path of `executable`, or an error saying to build it first.
    public static func executable(_ executable: String) throws -> URL {
        let binary = directory.appendingPathComponent(executable)
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw TestSupportError("\(binary.path) is not built; run `swift build` first (or set APPSTORE_BIN_DIR)")
        }
        return binary
    }

    /// Runs `executable` with `arguments` to completion, feeding `stdin` (empty when nil), with
    /// `environment` (this process's when nil); terminates it and throws after `timeout`.
    /// Output goes through files, not pipes, so a chatty child never blocks on a full pipe.
    public static func run(
        _ executable: String, _ arguments: [String], stdin: String? = nil, environment: [String: String]? = nil,
        timeout: Duration = .seconds(120)
    ) async throws -> CommandResult {
        let binary = try Self.executable(executable)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("run-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let outURL = dir.appendingPathComponent("stdout")
        let errURL = dir.appendingPathComponent("stderr")
        let inURL = dir.appendingPathComponent("stdin")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        FileManager.default.createFile(atPath: inURL.path, contents: Data((stdin ?? "").utf8))
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        let input = try FileHandle(forReadingFrom: inURL)
        defer {
            try? out.close()
            try? err.close()
            try? input.close()
        }
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now > deadline {
                process.terminate()
                throw TestSupportError("\(executable) \(arguments) did not finish within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return CommandResult(
            status: process.terminationStatus,
            stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
    }
}

/// What a finished command left: its exit status and output.
public struct CommandResult: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String

    /// Standard output, then standard error.
    public var output: String { stdout + stderr }
}
