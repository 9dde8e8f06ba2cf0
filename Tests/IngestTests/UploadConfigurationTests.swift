import EnvironmentSettings
import Foundation
import StageRuntime
import TestSupport
import Testing

@testable import IngestService

/// `INGEST_UPLOAD_AUTH` and its variables: required, checked at start, one line naming the
/// variable; open uploads only for Sandbox-only apps.
@Suite("upload authentication configuration")
struct UploadConfigurationTests {
    static let base = ["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"]

    func configuration(_ values: [String: String]) throws(ConfigurationError) -> IngestConfiguration {
        try IngestConfiguration(environment: EnvironmentReader(Self.base.merging(values) { $1 }))
    }

    /// The configuration error for `values`; fails the test when they are accepted.
    func problem(_ values: [String: String], sourceLocation: SourceLocation = #_sourceLocation) -> ConfigurationError? {
        do {
            _ = try configuration(values)
            Issue.record("accepted \(values)", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    func temporaryFile(_ contents: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID().uuidString.prefix(8))").path
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("no INGEST_UPLOAD_AUTH, or an unknown mode, is a start error naming it")
    func modeRequired() {
        #expect(problem([:])?.variable == "INGEST_UPLOAD_AUTH")
        #expect(problem([:])?.description.contains("jwt") == true)
        let unknown = problem(["INGEST_UPLOAD_AUTH": "open"])
        #expect(unknown?.variable == "INGEST_UPLOAD_AUTH")
        #expect(unknown?.problem.contains("jwt, hmac, none") == true)
    }

    @Test("none is refused when any app accepts Production, and needs APPSTORE_APPS")
    func openOnlyForSandbox() throws {
        let production = problem(["INGEST_UPLOAD_AUTH": "none", "APPSTORE_APPS": "com.example.a::Sandbox,com.example.b:123:Sandbox+Production"])
        #expect(production?.variable == "INGEST_UPLOAD_AUTH")
        #expect(production?.problem.contains("APPSTORE_APPS") == true)
        #expect(production?.problem.contains("com.example.b") == true)
        #expect(production?.problem.contains("com.example.a") == false)
        #expect(problem(["INGEST_UPLOAD_AUTH": "none", "APPSTORE_APPS": "com.example.p:123:Production"])?.variable == "INGEST_UPLOAD_AUTH")
        let missing = problem(["INGEST_UPLOAD_AUTH": "none"])
        #expect(missing?.variable == "APPSTORE_APPS")
        #expect(missing?.problem.contains("INGEST_UPLOAD_AUTH=none") == true)
        #expect(problem(["INGEST_UPLOAD_AUTH": "none", "APPSTORE_APPS": "not an app list"])?.variable == "APPSTORE_APPS")

        let open = try configuration(["INGEST_UPLOAD_AUTH": "NONE", "APPSTORE_APPS": "com.example.a::Sandbox,com.example.b::Sandbox"])
        #expect(open.uploadAuthentication.mode == .none)
        #expect(open.maxBodyBytes == 131_072, "MAX_BODY_BYTES defaults to 128 KiB")
        // Programmatic settings go through the same check.
        #expect(throws: OpenUploadSettings.Refusal.self) { try OpenUploadSettings(apps: []) }
    }

    @Test("jwt needs the JWKS, issuer and audience; each missing one is named")
    func jwtVariables() throws {
        let es = try temporaryFile(
            #"{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#
        )
        defer { try? FileManager.default.removeItem(atPath: es) }
        let all = [
            "INGEST_UPLOAD_AUTH": "jwt", "INGEST_UPLOAD_JWKS": es, "INGEST_UPLOAD_ISSUER": "https://id.example/",
            "INGEST_UPLOAD_AUDIENCE": "ingest",
        ]
        for name in ["INGEST_UPLOAD_JWKS", "INGEST_UPLOAD_ISSUER", "INGEST_UPLOAD_AUDIENCE"] {
            var values = all
            values[name] = nil
            #expect(problem(values)?.variable == name)
        }
        let read = try configuration(all)
        guard case .jwt(let jwt) = read.uploadAuthentication else {
            Issue.record("not jwt: \(read.uploadAuthentication)")
            return
        }
        #expect(jwt.keys == .file(es))
        #expect(jwt.userClaim == "sub")
        #expect(jwt.leeway == .seconds(60))
        #expect(jwt.refetchMinimumInterval == .seconds(30))
        let tuned = try configuration(all.merging(["INGEST_UPLOAD_USER_CLAIM": "uid", "INGEST_UPLOAD_LEEWAY_S": "5"]) { $1 })
        guard case .jwt(let custom) = tuned.uploadAuthentication else { return }
        #expect(custom.userClaim == "uid" && custom.leeway == .seconds(5))
        #expect(problem(all.merging(["INGEST_UPLOAD_LEEWAY_S": "3600"]) { $1 })?.variable == "INGEST_UPLOAD_LEEWAY_S")
    }

    @Test("the JWKS: an https URL or a readable file with a usable key; plain http only for tests, on loopback")
    func keySources() throws {
        let jwt = ["INGEST_UPLOAD_AUTH": "jwt", "INGEST_UPLOAD_ISSUER": "i", "INGEST_UPLOAD_AUDIENCE": "a"]
        let url = try configuration(jwt.merging(["INGEST_UPLOAD_JWKS": "https://id.example/.well-known/jwks.json"]) { $1 })
        guard case .jwt(let settings) = url.uploadAuthentication else { return }
        #expect(settings.keys == .url(URL(string: "https://id.example/.well-known/jwks.json")!))
        let http = problem(jwt.merging(["INGEST_UPLOAD_JWKS": "http://127.0.0.1:9999/jwks"]) { $1 })
        #expect(http?.variable == "INGEST_UPLOAD_JWKS")
        #expect(http?.problem.contains("https") == true)
        #expect(problem(jwt.merging(["INGEST_UPLOAD_JWKS": "ftp://id.example/jwks"]) { $1 })?.variable == "INGEST_UPLOAD_JWKS")
        #expect(problem(jwt.merging(["INGEST_UPLOAD_JWKS": "/nonexistent/jwks.json"]) { $1 })?.problem.contains("cannot be read") == true)
        // Only keys ingest can use count: an HS256 secret or a P-384 key makes no usable set.
        let unusable = try temporaryFile(#"{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"h"},{"kty":"EC","crv":"P-384","kid":"p","x":"AA","y":"AA"}]}"#)
        defer { try? FileManager.default.removeItem(atPath: unusable) }
        #expect(problem(jwt.merging(["INGEST_UPLOAD_JWKS": unusable]) { $1 })?.problem.contains("no usable RS256 or ES256") == true)
        let notJWKS = try temporaryFile("[1,2,3]")
        defer { try? FileManager.default.removeItem(atPath: notJWKS) }
        #expect(problem(jwt.merging(["INGEST_UPLOAD_JWKS": notJWKS]) { $1 })?.problem.contains("not a JSON Web Key Set") == true)

        #expect(
            try JWTUploadSettings.KeySource.parse("http://127.0.0.1:8/jwks", allowLoopbackHTTP: true) == .url(URL(string: "http://127.0.0.1:8/jwks")!)
        )
        #expect(throws: ConfigurationError.self) { try JWTUploadSettings.KeySource.parse("http://10.0.0.1/jwks", allowLoopbackHTTP: true) }
    }

    @Test("--help lists every ingest variable with the default an empty environment reads; the HMAC secret shows nowhere")
    func helpAndSecrets() throws {
        let secret = "hmac-secret-\(UUID().uuidString)"
        let file = try temporaryFile(secret)
        let read = try configuration(["INGEST_UPLOAD_AUTH": "hmac", "INGEST_UPLOAD_HMAC_SECRET_FILE": file])
        let variables = IngestConfiguration.variables
        #expect(Set(variables.map(\.name)).count == variables.count)
        let usage = ProcessBootstrap.usage(name: "ingest", summary: "ingests", variables: variables)
        for variable in variables {
            let line = usage.split(separator: "\n").first { $0.hasPrefix("  \(variable.name) ") }
            #expect(line != nil, "\(variable.name) is missing")
            if !variable.defaultText.isEmpty { #expect(line?.hasSuffix("[default: \(variable.defaultText)]") == true) }
        }
        let shown = Dictionary(uniqueKeysWithValues: variables.map { ($0.name, $0.defaultText) })
        #expect(shown["HTTP_PORT"] == "\(read.httpPort)" && shown["RAW_TOPIC"] == read.rawTopic)
        #expect(shown["MAX_BODY_BYTES"] == "\(read.maxBodyBytes)" && shown["MAX_JWS_BYTES"] == "\(read.maxJWSBytes)")
        #expect(shown["INGEST_ACK_TIMEOUT_MS"] == "5000" && read.ackTimeout == .seconds(5))
        #expect(shown["KAFKA_LINGER_MS"] == "5" && read.linger == .milliseconds(5))
        #expect(shown["INGEST_UPLOAD_HMAC_WINDOW_S"] == "300")
        guard case .hmac(let hmac) = read.uploadAuthentication else {
            Issue.record("not hmac: \(read.uploadAuthentication)")
            return
        }
        #expect(hmac.window == .seconds(300))
        for text in [usage, read.uploadAuthentication.description, "\(read.uploadAuthentication)"] {
            #expect(!text.contains(secret))
        }
    }

    @Test("hmac needs a readable secret of at least 32 bytes, which no description shows")
    func hmacSecret() throws {
        #expect(problem(["INGEST_UPLOAD_AUTH": "hmac"])?.variable == "INGEST_UPLOAD_HMAC_SECRET_FILE")
        #expect(
            problem(["INGEST_UPLOAD_AUTH": "hmac", "INGEST_UPLOAD_HMAC_SECRET_FILE": "/nonexistent/secret"])?.problem.contains("cannot be read")
                == true)
        let short = try temporaryFile("short-secret\n")
        defer { try? FileManager.default.removeItem(atPath: short) }
        let tooShort = problem(["INGEST_UPLOAD_AUTH": "hmac", "INGEST_UPLOAD_HMAC_SECRET_FILE": short])
        #expect(tooShort?.problem.contains("at least 32") == true)
        #expect(tooShort?.description.contains("short-secret") == false)

        let secret = "s3cr3t-" + String(repeating: "x", count: 40)
        let file = try temporaryFile(secret + "\n")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let read = try configuration(["INGEST_UPLOAD_AUTH": "hmac", "INGEST_UPLOAD_HMAC_SECRET_FILE": file, "INGEST_UPLOAD_HMAC_WINDOW_S": "60"])
        guard case .hmac(let hmac) = read.uploadAuthentication else { return }
        #expect(hmac.window == .seconds(60))
        #expect(!"\(read.uploadAuthentication)".contains(secret))
        #expect(!"\(hmac.secret)".contains("s3cr3t"))
        #expect(
            problem(["INGEST_UPLOAD_AUTH": "hmac", "INGEST_UPLOAD_HMAC_SECRET_FILE": file, "INGEST_UPLOAD_HMAC_WINDOW_S": "0"])?.variable
                == "INGEST_UPLOAD_HMAC_WINDOW_S")
    }

    @Test("the ingest executable refuses to start without INGEST_UPLOAD_AUTH: exit 78, one line naming it")
    func executableRefuses() async throws {
        let process = try await ManagedProcess(
            "ingest", environment: ["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "INGEST_UPLOAD_AUTH": "", "HTTP_PORT": "\(LocalHTTP.freePort())"],
            logName: "ingest-no-upload-auth-\(UUID().uuidString.prefix(8))")
        #expect(await process.waitForExit() == .exited(78))
        let lines = process.output.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.hasPrefix("configuration error: INGEST_UPLOAD_AUTH ") == true)

        let open = try await ManagedProcess(
            "ingest",
            environment: [
                "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "INGEST_UPLOAD_AUTH": "none", "APPSTORE_APPS": "com.example.p:42:Production",
                "HTTP_PORT": "\(LocalHTTP.freePort())",
            ], logName: "ingest-open-production-\(UUID().uuidString.prefix(8))")
        #expect(await open.waitForExit() == .exited(78))
        #expect(open.output.contains("APPSTORE_APPS accepts Production for com.example.p"))
    }
}
