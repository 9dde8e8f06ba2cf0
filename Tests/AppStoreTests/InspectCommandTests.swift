import AppStore
import Foundation
import TestSupport
import Testing

/// The built `appstorectl inspect` binary, run as support would run it.
@Suite("appstorectl inspect", .timeLimit(.minutes(15)))
struct InspectCommandTests {
    @Test(
        "every real Apple sample gets the verdict of Apple's library",
        .enabled(if: SharedFixtures.hasRealJWS || TestServices.isCI, Comment(rawValue: SharedFixtures.skipReason)))
    func realSamples() async throws {
        let samples = try SharedFixtures.realSamples()
        var accepted = 0
        var rejected: [String: String] = [:]
        for sample in samples {
            // The configuration Apple's library was run with: the sample's own app, or its parent's.
            let parent = samples.first { $0.file == sample.parentFile }
            let environment = sample.environment ?? parent?.environment ?? "Production"
            var arguments = ["inspect", try SharedFixtures.require("apple-real-jws/\(sample.file)").path, "--environment", environment]
            if let bundleId = sample.bundleId ?? parent?.bundleId { arguments += ["--bundle-id", bundleId] }
            if let appAppleId = sample.appAppleId ?? parent?.appAppleId ?? (environment == "Production" ? 1 : nil) {
                arguments += ["--app-apple-id", String(appAppleId)]
            }
            let result = try await BuiltProducts.run("appstorectl", arguments)
            let appleAccepts = sample.appleLibraryVerdict.hasPrefix("OK")
            if result.status == 0 {
                accepted += 1
                #expect(appleAccepts, "\(sample.file) accepted, Apple's library rejects it")
                let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
                let expectedKind = ["notification": "notification", "transaction": "transaction", "renewal": "renewal_info"][sample.kind]
                #expect(object?["kind"] as? String == expectedKind, "\(sample.file)")
                #expect(object?["verdict"] as? String == "valid")
            } else {
                #expect(result.status == 1, "\(sample.file): \(result.stderr)")
                #expect(!appleAccepts, "\(sample.file) rejected, Apple's library accepts it: \(result.stderr)")
                rejected[sample.file] = result.stderr.split(separator: ":").dropFirst().first.map { $0.trimmingCharacters(in: .whitespaces) }
            }
        }
        #expect(samples.count == 57)
        #expect(accepted == 56)
        #expect(rejected == ["legacy-no-environment-transaction-consumable-revoked-1.jws": "verification.wrong_environment"])
    }

    @Test(
        "a real notification pasted without flags: values assumed from the token and said so",
        .enabled(if: SharedFixtures.hasRealJWS || TestServices.isCI, Comment(rawValue: SharedFixtures.skipReason)))
    func assumedFromToken() async throws {
        let token = try SharedFixtures.realToken("sandbox-notification-did-renew-1.jws")
        let result = try await BuiltProducts.run("appstorectl", ["inspect", "-"], stdin: #"{"signedPayload":"\#(token)"}"#)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("assuming bundle ID com.loki-project.loki-messenger"))
        #expect(result.stderr.contains("assuming environment Sandbox"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let notification = try #require(object["notification"] as? [String: Any])
        let transaction = try #require(notification["transaction"] as? [String: Any])
        #expect(transaction["originalTransactionId"] as? String == "2000001024993299")
        #expect(notification["renewalInfo"] is [String: Any])
        #expect(object["inputField"] as? String == "signedPayload")
        // Pretty-printed with sorted keys.
        #expect(result.stdout.hasPrefix("{\n  \"certificates\""))
    }

    @Test("a test-CA notification is valid only when its root is trusted; a forgery fails with 1 and its code")
    func forgedToken() async throws {
        let token = try TestPKI.notification(originalTransactionId: "2000000000000001")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inspect-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("token.jws")
        try Data(token.utf8).write(to: file)
        let roots = try TestPKI.writeRoot()

        let untrusted = try await BuiltProducts.run("appstorectl", ["inspect", file.path])
        #expect(untrusted.status == 1)
        #expect(untrusted.stderr.contains("verification.untrusted_root"))
        #expect(untrusted.stdout.isEmpty)
        #expect(!untrusted.stderr.contains(token), "the token is never echoed")

        let trusted = try await BuiltProducts.run(
            "appstorectl",
            [
                "inspect", file.path, "--trust-root", roots.pem, "--bundle-id", TestPKI.bundleId, "--environment", "Sandbox",
                "--validation-date", "now",
            ])
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(!trusted.stderr.contains("assuming bundle ID") && !trusted.stderr.contains("assuming environment"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(trusted.stdout.utf8)) as? [String: Any])
        #expect((object["checkedAgainst"] as? [String: Any])?["validationTime"] as? String == "now")

        // Same token, DER root, but checked against another app: rejected with that code.
        let wrongApp = try await BuiltProducts.run(
            "appstorectl",
            [
                "inspect", file.path, "--trust-root", roots.der, "--bundle-id", TestPKI.otherBundleId,
            ])
        #expect(wrongApp.status == 1)
        #expect(wrongApp.stderr.contains("verification.wrong_bundle_id"))

        // A tampered signature.
        let tampered = TestPKI.tampered(token, payloadFrom: try TestPKI.notification(originalTransactionId: "2"))
        let bad = try await BuiltProducts.run("appstorectl", ["inspect", "-", "--trust-root", roots.pem], stdin: tampered)
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("verification.invalid_signature"))

        // Not a JWS at all.
        let junk = try await BuiltProducts.run("appstorectl", ["inspect", "-"], stdin: "hello")
        #expect(junk.status == 1)
        #expect(junk.stderr.contains("verification.malformed"))
    }

    @Test(
        "bad usage exits 2",
        arguments: [
            ["inspect"],
            ["inspect", "-", "--environment", "Staging"],
            ["inspect", "-", "--validation-date", "yesterday"],
            ["inspect", "-", "--app-apple-id", "abc"],
            ["inspect", "-", "--no-such-flag"],
            ["inspect", "/nonexistent/token.jws"],
            ["inspect", "-", "--trust-root", "/nonexistent/root.pem"],
            ["no-such-command"],
        ])
    func badUsage(arguments: [String]) async throws {
        let result = try await BuiltProducts.run("appstorectl", arguments, stdin: "")
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(!result.stderr.isEmpty)
    }

    @Test("--help lists the subcommands and exits 0")
    func help() async throws {
        let root = try await BuiltProducts.run("appstorectl", ["--help"])
        #expect(root.status == 0)
        #expect(root.stdout.contains("inspect"))
        let inspect = try await BuiltProducts.run("appstorectl", ["inspect", "--help"])
        #expect(inspect.status == 0)
        for flag in ["--bundle-id", "--app-apple-id", "--environment", "--trust-root", "--validation-date"] {
            #expect(inspect.stdout.contains(flag))
        }
    }
}
