import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import Crypto
import EnrichService
import EnvironmentSettings
import Foundation
import KafkaClient
import PipelineRecords
import StageRuntime
import TestSupport
import Testing

/// The stage's decisions without a broker: plans, sorting, the transaction in force, the token's
/// source, coalescing, and how failures are reported per record.
@Suite("enrich stage", .serialized, .timeLimit(.minutes(15)))
struct EnrichStageTests {
    let t0 = SimFixture.now().addingTimeInterval(-90 * 86_400)

    @Test("history is sorted by purchaseDate (ties by transactionId), duplicates collapse, the newest is in force")
    func sorting() {
        let a = SimFixture.transaction(original: "1", id: "10", purchased: t0)
        let b = SimFixture.transaction(original: "1", id: "9", purchased: t0.addingTimeInterval(30))
        let c = SimFixture.transaction(original: "1", id: "11", purchased: t0.addingTimeInterval(30))
        var cModified = c
        cModified.isUpgraded = true
        let sorted = EnrichmentBuilder.sorted([cModified, a, c, b].reversed())
        #expect(sorted.map(\.transactionId) == ["10", "9", "11"])
        let record = EnrichFixture.notification(a)
        let enrichment = EnrichmentBuilder.historyEnrichment(
            record: record, lookup: PurchaseLookupResult(history: [c, b, a], subscriptionStatus: nil, fetchedAt: t0))
        #expect(enrichment.inForceTransactionId == "11")
        #expect(enrichment.lookup == .history)
    }

    @Test("appAccountToken: Apple's newest word (history's newest token, then renewal info), else the record's own, else the app's hint")
    func tokenResolution() {
        let first = UUID()
        let second = UUID()
        let renewal = UUID()
        let hint = UUID()
        let history = [
            SimFixture.transaction(original: "1", id: "1", purchased: t0),
            SimFixture.transaction(original: "1", id: "2", purchased: t0.addingTimeInterval(1), token: first),
            SimFixture.transaction(original: "1", id: "3", purchased: t0.addingTimeInterval(2), token: second),
        ]
        let own = SimFixture.transaction(original: "1", id: "4", purchased: t0.addingTimeInterval(3), token: second)
        #expect(EnrichmentBuilder.resolveToken(record: EnrichFixture.notification(own), history: history + [own])! == (second, .transaction))
        // A late notification still carrying the token Apple replaced since: the history's newer token names the customer.
        #expect(EnrichmentBuilder.resolveToken(record: EnrichFixture.notification(history[1]), history: history)! == (second, .history))
        let bare = SimFixture.transaction(original: "1", id: "4", purchased: t0.addingTimeInterval(3))
        #expect(EnrichmentBuilder.resolveToken(record: EnrichFixture.notification(bare), history: history + [bare])! == (second, .history))
        // Apple's renewal info names the customer when no transaction does.
        let renewalInfo = JWSRenewalInfoDecodedPayload(originalTransactionId: "1", appAccountToken: renewal)
        #expect(
            EnrichmentBuilder.resolveToken(record: EnrichFixture.notification(bare), history: [history[0], bare], renewalInfo: renewalInfo)!
                == (renewal, .renewalInfo))
        var withRenewal = EnrichFixture.notification(bare)
        withRenewal.renewalInfo = renewalInfo
        #expect(EnrichmentBuilder.resolveToken(record: withRenewal, history: [])! == (renewal, .renewalInfo))
        #expect(EnrichmentBuilder.resolveToken(record: EnrichFixture.notification(own), history: [])! == (second, .transaction))
        #expect(EnrichmentBuilder.resolveToken(record: EnrichFixture.upload(bare, hint: hint), history: [history[0]])! == (hint, .appHint))
        #expect(EnrichmentBuilder.resolveToken(record: EnrichFixture.upload(own, hint: hint), history: [])! == (second, .transaction))
        #expect(EnrichmentBuilder.resolveToken(record: EnrichFixture.notification(bare), history: [history[0]]) == nil)
    }

    @Test("consumables and Xcode data (no API) are transaction-only, TEST is none, subscriptions and non-consumables look up history")
    func plans() {
        let consumable = SimFixture.transaction(original: "5", id: "5", purchased: t0, type: .consumable)
        #expect(EnrichmentBuilder.plan(for: EnrichFixture.notification(consumable)) == .transactionOnly)
        var xcode = EnrichFixture.upload(SimFixture.transaction(original: "0", id: "0", purchased: t0), hint: nil)
        xcode.environment = .xcode
        #expect(EnrichmentBuilder.plan(for: xcode) == .transactionOnly)
        #expect(EnrichmentBuilder.plan(for: EnrichFixture.testNotification()) == .none)
        guard
            case .history(let key) = EnrichmentBuilder.plan(
                for: EnrichFixture.notification(SimFixture.transaction(original: "6", id: "7", purchased: t0)))
        else {
            Issue.record("a subscription needs its history")
            return
        }
        #expect(key.isAutoRenewable && key.originalTransactionId == "6" && key.subscriptionGroupIdentifier == "21000000")
        guard
            case .history(let nc) = EnrichmentBuilder.plan(
                for: EnrichFixture.notification(SimFixture.transaction(original: "8", id: "8", purchased: t0, type: .nonConsumable)))
        else {
            Issue.record("a non-consumable needs its history")
            return
        }
        #expect(!nc.isAutoRenewable)
    }

    @Test("one batch: records of one purchase share one lookup with coalescing, one each without; failures stay per purchase")
    func coalescingAndFailures() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let purchases = (0..<3).map { p in
            (0..<3).map { i in
                SimFixture.transaction(original: "30000000000\(p)0", id: "30000000000\(p)\(i)", purchased: t0.addingTimeInterval(Double(i) * 86_400))
            }
        }
        try sim.apple.store.upsert(purchases.flatMap { $0 })
        let records =
            purchases.flatMap { $0.map { EnrichFixture.notification($0) } }
            + [
                EnrichFixture.testNotification(),
                EnrichFixture.notification(SimFixture.transaction(original: "9", id: "9", purchased: t0, type: .consumable)),
            ]
        let batch = try records.enumerated().map { try EnrichFixture.message($1, offset: Int64($0)) }

        for coalesce in [true, false] {
            sim.apple.faults.resetStatistics()
            let stage = try EnrichFixture.stage(sim, coalesce: coalesce)
            let results = try await stage.process(batch: batch)
            #expect(results.count == batch.count)
            let enriched = try results.map { try EnrichedRecord.decode(try $0.get()[0].value) }
            #expect(stage.lookupsPerformed == (coalesce ? 3 : 9))
            let stats = sim.apple.faults.statistics
            #expect(stats.byEndpoint["transaction_history"] == (coalesce ? 3 : 9))
            #expect(stats.byEndpoint["subscription_statuses"] == (coalesce ? 3 : 9))
            for (record, output) in zip(records, enriched) {
                #expect(output.verified == record)
            }
            for p in 0..<3 {
                for i in 0..<3 {
                    let e = enriched[p * 3 + i].enrichment
                    #expect(e.history.map(\.transactionId) == purchases[p].map(\.transactionId))
                    #expect(e.inForceTransactionId == purchases[p][2].transactionId)
                    #expect(e.subscriptionStatus?.status == .expired || e.subscriptionStatus?.status == .active)
                    #expect(e.subscriptionStatus?.transaction?.transactionId == purchases[p][2].transactionId)
                }
            }
            #expect(enriched[9].enrichment.lookup == .none)
            #expect(enriched[10].enrichment.lookup == .transactionOnly)
            #expect(enriched[10].enrichment.inForceTransactionId == "9")
        }

        // A purchase Apple does not know, with no signed transaction of its own, is a permanent
        // failure for its records only; the others pass.
        let unknownTransaction = SimFixture.transaction(original: "399999999990", id: "399999999991", purchased: t0)
        let unknown = EnrichFixture.withoutTransaction(unknownTransaction)
        let mixed = try [records[0], unknown, records[1]].enumerated().map { try EnrichFixture.message($1, offset: Int64($0)) }
        let results = try await EnrichFixture.stage(sim).process(batch: mixed)
        #expect(results.count == 3)
        #expect((try? results[0].get()) != nil && (try? results[2].get()) != nil)
        guard case .failure(let error) = results[1] else {
            Issue.record("the unknown purchase must fail")
            return
        }
        #expect(FailureClassification(error).code == "apple_api.4040010")
        #expect(!FailureClassification(error).isTransient)

        // With its own Apple-signed transaction, the history is only not visible yet: retried
        // within the wait after the record arrived, then enriched from that transaction.
        let signed = try EnrichFixture.message(EnrichFixture.notification(unknownTransaction))
        let waiting = try await EnrichFixture.stage(sim).process(batch: [signed])
        guard case .failure(let notYet) = waiting[0] else {
            Issue.record("within the wait the record is retried")
            return
        }
        #expect(FailureClassification(notYet).isTransient)
        #expect(FailureClassification(notYet).code == "apple_api.4040010")
        let later = try await EnrichFixture.stage(sim, clock: { Date().addingTimeInterval(61) }).process(batch: [signed])
        let fallback = try EnrichedRecord.decode(try #require(try later[0].get().first).value)
        #expect(fallback.enrichment.lookup == .transactionOnly)
        #expect(fallback.enrichment.inForceTransactionId == unknownTransaction.transactionId)

        // A transient failure stops the batch at its record: it and what follows are retried.
        sim.apple.faults.set(FaultPlan(errorShare: 1))
        let stopped = try await EnrichFixture.stage(sim).process(batch: [try EnrichFixture.message(records[9]), batch[0], batch[3]])
        sim.apple.faults.set(.none)
        #expect(stopped.count == 2, "the TEST notification passes, the first lookup fails, nothing after it runs")
        #expect((try? stopped[0].get()) != nil)
        guard case .failure(let transient) = stopped[1] else {
            Issue.record("the lookup must fail")
            return
        }
        #expect(FailureClassification(transient).isTransient)
    }

    @Test(
        "a StoreKit 1 receipt's transaction: Apple's signed copy makes it an upload of that purchase, enriched from history and keyed by the purchase"
    )
    func receipt() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let original = "2000000000950000"
        let transactions = (0..<3).map {
            SimFixture.transaction(original: original, id: "\(original)\($0)", purchased: t0.addingTimeInterval(Double($0) * 30 * 86_400))
        }
        try sim.apple.store.upsert(transactions)
        let customer = UUID()
        func receiptRecord(_ id: String) -> VerifiedRecord {
            VerifiedRecord(
                kind: .transaction, source: PipelineHeader.Source.appReceipt, environment: .sandbox, bundleId: SimFixture.bundleId,
                transactionId: id, hints: AppUploadHints(appAccountToken: customer, userId: "user-1", authentication: .jwt),
                verifiedAt: SimFixture.now())
        }
        let stage = try EnrichFixture.stage(sim)
        let results = try await stage.process(batch: [try EnrichFixture.message(receiptRecord(transactions[1].transactionId!))])
        let message = try #require(try results[0].get().first)
        #expect(message.key == Array("Sandbox:\(original)".utf8), "keyed by the purchase Apple's copy names")
        let enriched = try EnrichedRecord.decode(message.value)
        #expect(enriched.verified.source == "app-receipt")
        #expect(enriched.verified.transaction?.transactionId == transactions[1].transactionId)
        #expect(enriched.verified.originalTransactionId == original)
        #expect(enriched.verified.signedTransaction?.split(separator: ".").count == 3, "Apple's JWS kept, as an upload's")
        #expect(enriched.verified.eventKey?.hasPrefix("transaction:\(transactions[1].transactionId!):") == true)
        #expect(enriched.enrichment.lookup == .history)
        #expect(enriched.enrichment.history.map(\.transactionId) == transactions.map(\.transactionId))
        #expect(enriched.enrichment.appAccountToken == customer && enriched.enrichment.appAccountTokenSource == .appHint)
        // A transaction Apple does not know: nothing it signed stands in, so it is dead-lettered with Apple's code.
        let unknown = try await stage.process(batch: [try EnrichFixture.message(receiptRecord("2000000000959999"))])
        guard case .failure(let error) = unknown[0] else {
            Issue.record("an unknown receipt transaction must fail")
            return
        }
        #expect(FailureClassification(error).code == "apple_api.4040010" && !FailureClassification(error).isTransient)
    }

    @Test("configuration: credentials required per app, bad values named")
    func configuration() throws {
        let keyPath = try SimFixture.writeAPIKey()
        let good: [String: String] = [
            "APPSTORE_APPS": "\(SimFixture.bundleId)::Sandbox",
            "APPSTORE_API_CREDENTIALS": "\(SimFixture.bundleId):iss:KEY:\(keyPath)",
            "APPSTORE_API_BASE_URL": "http://127.0.0.1:8090/",
            "ENRICH_COALESCE": "off",
        ]
        let configuration = try EnrichConfiguration(environment: EnvironmentReader(good))
        #expect(configuration.api.client.baseURLOverride == "http://127.0.0.1:8090")
        #expect(!configuration.coalesce)
        func problem(_ change: [String: String?]) -> String? {
            var values = good
            for (k, v) in change { values[k] = v }
            do {
                _ = try EnrichConfiguration(environment: EnvironmentReader(values))
                return nil
            } catch {
                return error.description
            }
        }
        #expect(problem(["APPSTORE_API_CREDENTIALS": nil])?.contains("APPSTORE_API_CREDENTIALS is required") == true)
        #expect(problem(["APPSTORE_APPS": "com.other::Sandbox"])?.contains("has no key for com.other") == true)
        #expect(problem(["APPSTORE_API_BASE_URL": "ftp://x"])?.contains("APPSTORE_API_BASE_URL") == true)
        // Plain HTTP carries request tokens in clear: only where no app accepts Production.
        let production = "\(SimFixture.bundleId):1234:Production"
        #expect(problem(["APPSTORE_APPS": production])?.contains("APPSTORE_API_BASE_URL is http://") == true)
        #expect(problem(["APPSTORE_APPS": production, "APPSTORE_API_BASE_URL": "https://127.0.0.1:8090"]) == nil)
        #expect(problem(["APPSTORE_APPS": production, "APPSTORE_API_BASE_URL": nil]) == nil)
        #expect(problem(["APPSTORE_API_RATE_SCALE": "fast"])?.contains("APPSTORE_API_RATE_SCALE") == true)
        #expect(problem(["ENRICH_COALESCE": "maybe"])?.contains("ENRICH_COALESCE") == true)
        #expect(problem(["APPSTORE_API_CREDENTIALS": "\(SimFixture.bundleId):iss:KEY:/nope.p8"])?.contains("cannot be read") == true)
    }

    @Test("configuration: a key held in a variable (env:NAME) is read as a secret and printed nowhere")
    func keyInVariable() throws {
        let pem = SimFixture.apiKey.privateKey.pemRepresentation
        let values = [
            "APPSTORE_APPS": "\(SimFixture.bundleId)::Sandbox",
            "APPSTORE_API_CREDENTIALS": "\(SimFixture.bundleId):iss:KEY:env:SIM_KEY_PEM",
            "SIM_KEY_PEM": pem,
        ]
        let configuration = try EnrichConfiguration(environment: EnvironmentReader(values))
        #expect(configuration.api.client.credentials.map(\.bundleId) == [SimFixture.bundleId])
        let body = pem.split(separator: "\n")[1]
        let usage = ProcessBootstrap.usage(name: "enrich", summary: "enriches", variables: EnrichConfiguration.variables)
        for text in [usage, "\(configuration.api.client.credentials)"] {
            #expect(!text.contains(body))
        }
        let blank = values.merging(["SIM_KEY_PEM": "  "]) { $1 }
        #expect(throws: ConfigurationError.self) { try EnrichConfiguration(environment: EnvironmentReader(blank)) }
    }
}
