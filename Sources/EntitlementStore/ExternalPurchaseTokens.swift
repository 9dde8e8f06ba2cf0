import AppStore
import Foundation
import GrantDecision

/// An `EXTERNAL_PURCHASE_TOKEN` as published on `entitlements.changes.v1` (change
/// `external_purchase_token`), for the service that reports external purchases to Apple. It names
/// no customer, so it has no `customerId` and no `seq`: it is keyed
/// `<environment>:external-purchase:<externalPurchaseId>`, and consumers drop repeats by
/// `cause.eventKey` (migration 0019).
public struct ExternalPurchaseTokenEvent: Codable, Hashable, Sendable {
    /// The `change` of every such event.
    public static let change = "external_purchase_token"

    public var schema = "entitlements.changes.v1"
    public var environment: String
    public var change = ExternalPurchaseTokenEvent.change
    /// Apple's token as signed: `externalPurchaseId`, its dates (milliseconds), type and app.
    public var externalPurchaseToken: ExternalPurchaseToken
    /// The notification (its `subtype`: `UNREPORTED`, `ACTIVE_TOKEN_REMINDER` or `CREATED`).
    public var cause: GrantCause

    public init(environment: String, externalPurchaseToken: ExternalPurchaseToken, cause: GrantCause) {
        self.environment = environment
        self.externalPurchaseToken = externalPurchaseToken
        self.cause = cause
    }

    /// The record key on the changes topic.
    public static func key(environment: String, externalPurchaseId: String) -> String {
        "\(environment):external-purchase:\(externalPurchaseId)"
    }
}

extension StoreRows {
    /// An `EXTERNAL_PURCHASE_TOKEN` to record and publish (``StoreStatements/recordExternalPurchaseTokens``).
    struct ExternalPurchaseTokenRow: Encodable {
        var environment: String
        var eventKey: String
        var externalPurchaseId: String
        var subtype: String?
        var body: ExternalPurchaseTokenEvent
    }

    /// One published token event (``StoreStatements/markExternalPurchaseTokensPublished``).
    struct PublishedToken: Encodable {
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
