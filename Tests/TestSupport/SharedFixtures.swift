import Foundation

/// The fixtures shared beside the repository (`../shared/fixtures`): Apple's real signed data and
/// the test data of Apple's own library. Not part of a clone: tests that read them run when they
/// are present and, when they are not, skip outside CI (saying so) and fail in CI
/// (`CI=true`), where a missing fixture is a broken machine, never a reason to pass.
/// `APPSTORE_SHARED_FIXTURES` names another directory (a run that must see them missing points it
/// at an empty one).
public enum SharedFixtures {
    /// Where the fixtures are looked for.
    public static var expectedDirectory: URL {
        if let path = ProcessInfo.processInfo.environment["APPSTORE_SHARED_FIXTURES"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        return TestServices.repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared/fixtures")
    }

    /// The fixtures directory, when present.
    public static var directory: URL? {
        FileManager.default.fileExists(atPath: expectedDirectory.path) ? expectedDirectory : nil
    }

    /// A fixture file's URL, when it is present.
    public static func url(_ path: String) -> URL? {
        guard let url = directory?.appendingPathComponent(path), FileManager.default.fileExists(atPath: url.path) else { return nil }
        return url
    }

    /// A fixture file's URL; when it is missing, an error that says which, where it was looked for
    /// and how to get it.
    public static func require(_ path: String) throws -> URL {
        guard let url = url(path) else { throw missing(path) }
        return url
    }

    /// The error for a missing fixture.
    public static func missing(_ path: String) -> TestSupportError {
        TestSupportError(
            "the shared fixture \(path) is missing from \(expectedDirectory.path): the fixtures are not in the repository; "
                + "CI and each session get them as shared/fixtures beside the checkout (../shared/fixtures); "
                + "put a copy or a link there, or set APPSTORE_SHARED_FIXTURES to a directory that holds them")
    }

    /// Why a suite or test that reads the fixtures does not run here (outside CI only).
    public static let skipReason = "the shared fixtures (../shared/fixtures) are missing; with CI=true this fails instead"

    /// Whether Apple's real signed samples (`apple-real-jws/`, with their manifest) are present.
    public static var hasRealJWS: Bool { url("apple-real-jws/manifest.json") != nil }

    /// Whether the test data of Apple's library (`apple-library-testdata/`) is present.
    public static var hasAppleLibraryData: Bool { url("apple-library-testdata/certs/testCA.der") != nil }

    /// The file names of every real signed sample (`*.jws`).
    public static func realJWSFiles() throws -> [String] {
        let directory = try require("apple-real-jws")
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".jws") }.sorted()
    }

    /// A real sample's compact JWS, without surrounding white space.
    public static func realToken(_ file: String) throws -> String {
        try String(contentsOf: try require("apple-real-jws/\(file)"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// One entry of `apple-real-jws/manifest.json`: a sample, what it is, and the verdict Apple's
    /// Python library gave it offline.
    public struct RealSample: Decodable, Sendable {
        public let file: String
        public let kind: String
        public let environment: String?
        public let bundleId: String?
        public let appAppleId: Int64?
        public let parentFile: String?
        public let appleLibraryVerdict: String

        enum CodingKeys: String, CodingKey {
            case file, kind, environment, bundleId, appAppleId
            case parentFile = "parent_file"
            case appleLibraryVerdict = "official_python_lib_offline"
        }
    }

    /// Every sample of the manifest.
    public static func realSamples() throws -> [RealSample] {
        try JSONDecoder().decode([RealSample].self, from: Data(contentsOf: try require("apple-real-jws/manifest.json")))
    }
}
