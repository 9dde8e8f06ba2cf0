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

    /// Runs `executable` with `arguments` to completion, feeding `stdin` (none when nil), with
    /// `environment` (this process's when nil); tears it down and throws after `timeout`.
    public static func run(
        _ executable: String, _ arguments: [String], stdin: String? = nil, environment: [String: String]? = nil,
        timeout: Duration = .seconds(120)
    ) async throws -> CommandResult {
        try await ManagedProcess.run(try Self.executable(executable), arguments, stdin: stdin, environment: environment, timeout: timeout)
    }
}
