import Foundation
import TestSupport

/// Runs one of the package's built executables to completion with separate stdout and stderr.
enum CommandRunner {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// The directory of built executables: `APPSTORE_BIN_DIR`, else the directory of the running test
    /// binary (`<scratch>/debug`, so any `--scratch-path` works), else `.build/debug`.
    static var binDirectory: URL {
        if let dir = ProcessInfo.processInfo.environment["APPSTORE_BIN_DIR"] { return URL(fileURLWithPath: dir) }
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
            // On Linux the test binary is `<bin>/Package.xctest`; on macOS it sits inside that bundle.
            while ["MacOS", "Contents"].contains(dir.lastPathComponent) || dir.lastPathComponent.hasSuffix(".xctest") {
                dir.deleteLastPathComponent()
            }
            if FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("appstorectl").path) { return dir }
        }
        return TestServices.repositoryRoot.appendingPathComponent(".build/debug")
    }

    /// A long-running child process (a stage), its output in a log file.
    final class Child: @unchecked Sendable {
        let process = Process()
        let logURL: URL

        init(_ executable: String, environment: [String: String]) throws {
            let binary = binDirectory.appendingPathComponent(executable)
            guard FileManager.default.isExecutableFile(atPath: binary.path) else {
                throw TestSupportError("\(binary.path) is not built; build the package first (or set APPSTORE_BIN_DIR)")
            }
            logURL = FileManager.default.temporaryDirectory.appendingPathComponent("\(executable)-\(UUID().uuidString.prefix(8)).log")
            FileManager.default.createFile(atPath: logURL.path, contents: nil)
            let log = try FileHandle(forWritingTo: logURL)
            process.executableURL = binary
            var env = ProcessInfo.processInfo.environment
            env.merge(environment) { _, new in new }
            process.environment = env
            process.standardOutput = log
            process.standardError = log
            try process.run()
        }

        var output: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

        /// SIGTERM, then the exit status (SIGKILL after `timeout`).
        func terminate(timeout: Duration = .seconds(30)) async -> Int32 {
            process.terminate()
            let deadline = ContinuousClock.now + timeout
            while process.isRunning {
                if ContinuousClock.now > deadline { kill(process.processIdentifier, SIGKILL) }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return process.terminationStatus
        }
    }

    /// Runs `executable` with `arguments`, feeding `stdin` when given; waits at most `timeout`.
    static func run(
        _ executable: String, _ arguments: [String], stdin: String? = nil, environment: [String: String]? = nil,
        timeout: Duration = .seconds(60)
    ) async throws -> Result {
        let binary = binDirectory.appendingPathComponent(executable)
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw TestSupportError("\(binary.path) is not built; build the package first (or set APPSTORE_BIN_DIR)")
        }
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
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        process.standardInput = try FileHandle(forReadingFrom: inURL)
        try process.run()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now > deadline {
                process.terminate()
                throw TestSupportError("\(executable) \(arguments) did not finish within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return Result(
            status: process.terminationStatus,
            stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
    }
}
