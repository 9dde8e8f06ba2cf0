import AppStore
import Foundation
import GrantDecision
import PipelineRecords

extension StoreRows {
    /// An `EXTERNAL_PURCHASE_TOKEN` to record and publish (``StoreStatements/recordExternalPurchaseTokens``).
    struct ExternalPurchaseTokenRow {
        var environment: String
        var eventKey: String
        var externalPurchaseId: String
        var subtype: String?
        var body: ExternalPurchaseTokenEvent
    }

    /// One published token event (``StoreStatements/markExternalPurchaseTokensPublished``).
    struct PublishedToken {
        var environment: String
        var eventKey: String
    }
}

extension BatchState {
    /// Keeps a new `EXTERNAL_PURCHASE_TOKEN` to record with the batch (its row is its outbox entry).
    mutating func noteExternalPurchaseToken(of event: GrantEvent) {
        guard let token = event.externalPurchaseToken, let id = token.externalPurchaseId else { return }
        externalPurchaseTokens.append(
            StoreRows.ExternalPurchaseTokenRow(
                environment: event.environment, eventKey: event.eventKey, externalPurchaseId: id, subtype: event.subtype?.rawValue,
                body: ExternalPurchaseTokenEvent(environment: event.environment, externalPurchaseToken: token, cause: event.cause)))
    }
}
