import AppStore
import AppStoreSigning
import EnvironmentSettings
import Foundation
import StageRuntime
import TestSupport
import Testing
import VerifyService

@Suite("verify configuration from the environment")
struct VerifyConfigurationTests {
    func read(_ values: [String: String]) throws(ConfigurationError) -> VerifyConfiguration {
        try VerifyConfiguration(environment: EnvironmentReader(values))
    }

    func expectError(_ values: [String: String], variable: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try read(values)
            Issue.record("accepted \(values)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.variable == variable, "\(error)", sourceLocation: sourceLocation)
            #expect(error.description.contains(variable), sourceLocation: sourceLocation)
        }
    }

    @Test("a list of apps with environments, defaults for the rest")
    func list() throws {
        let config = try read(["APPSTORE_APPS": "com.example.app:1234567890:Sandbox+Production, com.example.beta::sandbox"])
        #expect(config.apps.count == 2)
        #expect(config.apps[0].bundleId == "com.example.app")
        #expect(config.apps[0].appAppleId == 1_234_567_890)
        #expect(config.apps[0].environments == [.sandbox, .production])
        #expect(config.apps[1].appAppleId == nil)
        #expect(config.apps[1].environments == [.sandbox])
        #expect(config.additionalTrustedRoots.isEmpty)
        #expect(config.validationTime == .signedDate)
        #expect(config.chainCache.isEnabled)
        #expect(config.maximumJWSBytes == 1 << 20)
    }

    @Test("apps from a JSON file, roots from PEM and DER files, validation time and cache")
    func files() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("verify-config-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let apps = dir.appendingPathComponent("apps.json")
        try Data(#"[{"bundleId":"com.example.app","appAppleId":42,"environments":["Production","Sandbox"]}]"#.utf8).write(to: apps)
        let roots = try TestPKI.writeRoot()
        let config = try read([
            "APPSTORE_APPS": apps.path, "APPSTORE_TRUSTED_ROOTS": "\(roots.pem), \(roots.der)",
            "APPSTORE_VALIDATION_TIME": "2025-10-01T00:00:00Z", "APPSTORE_CHAIN_CACHE": "off",
        ])
        #expect(config.apps.first?.appAppleId == 42)
        #expect(config.apps.first?.environments == [.sandbox, .production])
        #expect(config.additionalTrustedRoots == [TestPKI.trusted.root, TestPKI.trusted.root])
        #expect(config.validationTime == .fixed(Date(timeIntervalSince1970: 1_759_276_800)))
        #expect(!config.chainCache.isEnabled)
        #expect(try read(["APPSTORE_APPS": "a::Sandbox", "APPSTORE_VALIDATION_TIME": "now"]).validationTime == .currentTime)
    }

    @Test("each bad value names its variable")
    func errors() throws {
        expectError([:], variable: "APPSTORE_APPS")
        expectError(["APPSTORE_APPS": "com.example.app"], variable: "APPSTORE_APPS")
        expectError(["APPSTORE_APPS": "com.example.app:12:Staging"], variable: "APPSTORE_APPS")
        expectError(["APPSTORE_APPS": "com.example.app:abc:Sandbox"], variable: "APPSTORE_APPS")
        // Production needs the app Apple ID, as in Apple's libraries.
        expectError(["APPSTORE_APPS": "com.example.app::Production"], variable: "APPSTORE_APPS")
        expectError(["APPSTORE_APPS": "a::Sandbox,a::Sandbox"], variable: "APPSTORE_APPS")
        expectError(["APPSTORE_APPS": "/nonexistent/apps.json"], variable: "APPSTORE_APPS")
        expectError(["APPSTORE_APPS": "a::Sandbox", "APPSTORE_TRUSTED_ROOTS": "/nonexistent.pem"], variable: "APPSTORE_TRUSTED_ROOTS")
        let junk = FileManager.default.temporaryDirectory.appendingPathComponent("junk-\(UUID().uuidString.prefix(8)).pem")
        try Data("not a certificate".utf8).write(to: junk)
        expectError(["APPSTORE_APPS": "a::Sandbox", "APPSTORE_TRUSTED_ROOTS": junk.path], variable: "APPSTORE_TRUSTED_ROOTS")
        expectError(["APPSTORE_APPS": "a::Sandbox", "APPSTORE_VALIDATION_TIME": "yesterday"], variable: "APPSTORE_VALIDATION_TIME")
        expectError(["APPSTORE_APPS": "a::Sandbox", "APPSTORE_CHAIN_CACHE": "maybe"], variable: "APPSTORE_CHAIN_CACHE")
        expectError(["APPSTORE_APPS": "a::Sandbox", "APPSTORE_MAX_JWS_BYTES": "10"], variable: "APPSTORE_MAX_JWS_BYTES")
    }

    @Test(
        "APPSTORE_REVOCATION_CHECK: off by default; on gives the verifier OCSP over HTTP with Apple's 15-minute lifetime; anything else stops the start"
    )
    func revocationCheck() throws {
        let off = try read(["APPSTORE_APPS": "a::Sandbox"])
        #expect(!off.checksRevocation)
        #expect(off.verifierConfiguration.revocationChecking == nil)
        #expect(try read(["APPSTORE_APPS": "a::Sandbox", "APPSTORE_REVOCATION_CHECK": "off"]).verifierConfiguration.revocationChecking == nil)
        for spelling in ["on", "ON"] {
            let on = try read(["APPSTORE_APPS": "a::Sandbox", "APPSTORE_REVOCATION_CHECK": spelling])
            #expect(on.checksRevocation)
            let checking = try #require(on.verifierConfiguration.revocationChecking)
            #expect(checking.cacheLifetime == 15 * 60)
            #expect(checking.transport is HTTPOCSPTransport)
        }
        #expect(try read(["APPSTORE_APPS": "a::Sandbox", "APPSTORE_REVOCATION_CHECK": "on", "APPSTORE_VALIDATION_TIME": "now"]).checksRevocation)
        expectError(["APPSTORE_APPS": "a::Sandbox", "APPSTORE_REVOCATION_CHECK": "yes please"], variable: "APPSTORE_REVOCATION_CHECK")
        // An OCSP answer speaks of now: it cannot vouch for certificates checked at a fixed date.
        expectError(
            ["APPSTORE_APPS": "a::Sandbox", "APPSTORE_REVOCATION_CHECK": "on", "APPSTORE_VALIDATION_TIME": "2025-10-01T00:00:00Z"],
            variable: "APPSTORE_REVOCATION_CHECK")
        #expect(VerifyConfiguration.variables.map(\.name).contains("APPSTORE_REVOCATION_CHECK"))
    }

    @Test("every variable is listed for --help")
    func helpListsVariables() {
        let names = VerifyConfiguration.variables.map(\.name)
        for name in ["APPSTORE_APPS", "APPSTORE_TRUSTED_ROOTS", "APPSTORE_VALIDATION_TIME", "APPSTORE_CHAIN_CACHE"] {
            #expect(names.contains(name))
        }
    }
}
