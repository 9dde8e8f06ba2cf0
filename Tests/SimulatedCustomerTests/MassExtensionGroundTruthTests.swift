import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import Foundation
import SimulatedCustomers
import SimulatorLifecycleRoutes
import TestSupport
import Testing

/// A lifecycle run's ground truth after Apple's mass renewal extension (what `deploy/local/run` does
/// once the pipeline drained): the streaming subscriber is expected with the later end, the one in
/// billing retry still with nothing, everyone else as before.
@Suite("The lifecycle's ground truth follows a mass renewal extension", .timeLimit(.minutes(15)))
struct MassExtensionGroundTruthTests {
    @Test("mass-extended ends 3 days later; mass-extension-ineligible fails and holds nothing; nobody else changes")
    func groundTruthFollowsExtension() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let runs = LifecycleRuns(apple: sim.apple, defaultBundleId: SimFixture.bundleId)
        var prepare = LifecyclePrepareRequest(customers: LifecycleScenario.rotation.count)
        prepare.monthSeconds = 600
        _ = try await runs.prepare(prepare)
        let before = runs.status.customers
        let extended = try #require(before.first { $0.scenario == LifecycleScenario.massExtended.rawValue })
        let ineligible = try #require(before.first { $0.scenario == LifecycleScenario.massExtensionIneligible.rawValue })
        let end = try #require(extended.entitlements.first { $0.entitlement == "streaming" }?.until)
        #expect(ineligible.entitlements.isEmpty)

        let product = SimulationCatalog.standard(bundleId: SimFixture.bundleId).streamingYearly.productId
        let requestID = UUID().uuidString
        _ = try await sim.client.massExtendRenewalDate(
            MassExtendRenewalDateRequest(extendByDays: 3, extendReasonCode: 3, requestIdentifier: requestID, productId: product),
            target: SimFixture.target)
        var status = try await sim.client.massExtensionStatus(productId: product, requestIdentifier: requestID, target: SimFixture.target)
        while status.complete != true {
            try await Task.sleep(for: .milliseconds(20))
            status = try await sim.client.massExtensionStatus(productId: product, requestIdentifier: requestID, target: SimFixture.target)
        }
        #expect(status.succeededCount == 1 && status.failedCount == 1)

        let after = Dictionary(runs.status.customers.map { ($0.customer, $0.entitlements) }, uniquingKeysWith: { a, _ in a })
        #expect(after[extended.customer]?.first { $0.entitlement == "streaming" }?.until == end.addingTimeInterval(3 * 86_400))
        #expect(after[ineligible.customer]?.isEmpty == true)
        for customer in before where customer.customer != extended.customer {
            #expect(after[customer.customer] == customer.entitlements, "\(customer.scenario)")
        }
    }
}
