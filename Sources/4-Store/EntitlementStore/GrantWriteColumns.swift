import AppStore
import Foundation
import GrantDecision
import JSONCoding
import PipelineRecords
import PostgresNIO

/// `grant_write`'s typed arguments (schemas/migrations/functions/grant_write.sql): the rows a batch's
/// decisions changed, one array per column of each table, bound as Postgres arrays and read there
/// with `unnest`. Nothing is JSON but Apple's transaction payloads and the purchase states, which
/// the tables keep as jsonb. ``parameters`` names each parameter once, with its SQL type and its
/// value, so the statement and its bindings cannot disagree; `GrantWriteContractTests` holds the list equal
/// to the function's signature.
struct GrantWriteColumns {
    var customerEnv: [String] = [], customerId: [UUID] = [], customerExternalUser: [String?] = []
    var transactionEnv: [String] = [], transactionPayload: [String] = [], transactionRawJWS: [String?] = []
    var purchaseState: [String] = [], purchaseOwner: [UUID?] = []
    var claimEnv: [String] = [], claimPurchase: [String] = [], claimCustomer: [UUID] = [], claimFirstAt: [Date] = []
    var claimVerified: [Bool] = [], claimStatus: [String] = [], claimCause: [String] = []
    var deletionEnv: [String] = [], deletionCustomer: [UUID] = [], deletionKey: [String] = [], deletionSource: [String] = []
    var entitlementEnv: [String] = [], entitlementCustomer: [UUID] = [], entitlementKey: [String] = [], entitlementSource: [String] = []
    var entitlementSourceKind: [String] = [], entitlementProduct: [String] = [], entitlementActive: [Bool] = []
    var entitlementFrom: [Date?] = [], entitlementUntil: [Date?] = [], entitlementReason: [String] = []
    var consumableEnv: [String] = [], consumableTransaction: [String] = [], consumableCustomer: [UUID?] = [], consumableProduct: [String] = []
    var consumableKeys: [String] = [], consumableQuantity: [Int32] = [], consumablePurchasedAt: [Date?] = []
    var consumableRevokedAt: [Date?] = [], consumableRevocationReason: [Int16?] = [], consumableAsOf: [Date] = []
    var consumableEventKey: [String] = []
    var notificationEnv: [String] = [], notificationKey: [String] = [], notificationUUID: [String?] = [], notificationKind: [String] = []
    var notificationSource: [String] = [], notificationType: [String] = [], notificationSubtype: [String?] = []
    var notificationPurchase: [String?] = [], notificationTransaction: [String?] = [], notificationSignedDate: [Date?] = []
    var notificationVerifiedAt: [Date] = [], notificationIngestedAt: [Date?] = [], notificationOutcome: [String] = []
    var notificationNote: [String?] = [], notificationTraceId: [String?] = []
    var requestEnv: [String] = [], requestUUID: [String] = [], requestBundle: [String] = [], requestTransaction: [String?] = []
    var requestPurchase: [String?] = [], requestReason: [String?] = [], requestSignedDate: [Date?] = [], requestDeadline: [Date] = []
    var changeEnv: [String] = [], changeCustomer: [UUID] = [], changeIndex: [Int32] = [], changeEventHead: [String] = [],
        changeEventTail: [String] = []
    var changeTrace: [String?] = [], changeKind: [String] = [], changeKey: [String] = [], changeSource: [String] = []
    var changeProduct: [String] = [], changeActive: [Bool] = [], changeUntil: [Date?] = [], changeReason: [String] = []
    var changeQuantity: [Int32?] = [], changeCauseKey: [String] = [], changeCauseType: [String] = [], changeCauseSubtype: [String?] = []
    var changeCauseLookup: [String] = [], changeCauseAsOf: [Date] = [], changeCauseSignedDate: [Date?] = []

    /// True when the batch changed nothing (every event a duplicate).
    var isEmpty: Bool {
        customerEnv.isEmpty && transactionEnv.isEmpty && purchaseState.isEmpty && claimEnv.isEmpty && deletionEnv.isEmpty
            && entitlementEnv.isEmpty && consumableEnv.isEmpty && notificationEnv.isEmpty && requestEnv.isEmpty && changeEnv.isEmpty
    }

    /// One parameter of `grant_write`: its name and SQL type in the function's signature, and how
    /// its column is bound.
    typealias Parameter = ArrayParameter<GrantWriteColumns>

    /// `grant_write`'s parameters in order.
    static let parameters: [Parameter] = [
        .init("customer_env", "text[]", \.customerEnv), .init("customer_uuid", "uuid[]", \.customerId),
        .init("customer_external_user", "text[]", \.customerExternalUser),
        .init("transaction_env", "text[]", \.transactionEnv), .init("transaction_payload", "jsonb[]", \.transactionPayload),
        .init("transaction_raw_jws", "text[]", \.transactionRawJWS),
        .init("purchase_state", "jsonb[]", \.purchaseState), .init("purchase_owner", "uuid[]", \.purchaseOwner),
        .init("claim_env", "text[]", \.claimEnv), .init("claim_purchase", "text[]", \.claimPurchase),
        .init("claim_customer", "uuid[]", \.claimCustomer), .init("claim_first_at", "timestamp with time zone[]", moments: \.claimFirstAt),
        .init("claim_verified", "boolean[]", \.claimVerified), .init("claim_status", "text[]", \.claimStatus),
        .init("claim_cause", "text[]", \.claimCause),
        .init("deletion_env", "text[]", \.deletionEnv), .init("deletion_customer", "uuid[]", \.deletionCustomer),
        .init("deletion_key", "text[]", \.deletionKey), .init("deletion_source", "text[]", \.deletionSource),
        .init("entitlement_env", "text[]", \.entitlementEnv), .init("entitlement_customer", "uuid[]", \.entitlementCustomer),
        .init("entitlement_name", "text[]", \.entitlementKey), .init("entitlement_source", "text[]", \.entitlementSource),
        .init("entitlement_source_kind", "text[]", \.entitlementSourceKind), .init("entitlement_product", "text[]", \.entitlementProduct),
        .init("entitlement_active", "boolean[]", \.entitlementActive),
        .init("entitlement_from", "timestamp with time zone[]", moments: \.entitlementFrom),
        .init("entitlement_until", "timestamp with time zone[]", moments: \.entitlementUntil),
        .init("entitlement_reason", "text[]", \.entitlementReason),
        .init("consumable_env", "text[]", \.consumableEnv), .init("consumable_transaction", "text[]", \.consumableTransaction),
        .init("consumable_customer", "uuid[]", \.consumableCustomer), .init("consumable_product", "text[]", \.consumableProduct),
        .init("consumable_keys", "jsonb[]", \.consumableKeys), .init("consumable_quantity", "integer[]", \.consumableQuantity),
        .init("consumable_purchased_at", "timestamp with time zone[]", moments: \.consumablePurchasedAt),
        .init("consumable_revoked_at", "timestamp with time zone[]", moments: \.consumableRevokedAt),
        .init("consumable_revocation_reason", "smallint[]", \.consumableRevocationReason),
        .init("consumable_as_of", "timestamp with time zone[]", moments: \.consumableAsOf),
        .init("consumable_event_key", "text[]", \.consumableEventKey),
        .init("notification_env", "text[]", \.notificationEnv), .init("notification_key", "text[]", \.notificationKey),
        .init("notification_id", "text[]", \.notificationUUID), .init("notification_kind", "text[]", \.notificationKind),
        .init("notification_source", "text[]", \.notificationSource), .init("notification_type_name", "text[]", \.notificationType),
        .init("notification_subtype", "text[]", \.notificationSubtype), .init("notification_purchase", "text[]", \.notificationPurchase),
        .init("notification_transaction", "text[]", \.notificationTransaction),
        .init("notification_signed_date", "timestamp with time zone[]", moments: \.notificationSignedDate),
        .init("notification_verified_at", "timestamp with time zone[]", moments: \.notificationVerifiedAt),
        .init("notification_ingested_at", "timestamp with time zone[]", moments: \.notificationIngestedAt),
        .init("notification_outcome", "text[]", \.notificationOutcome), .init("notification_note", "text[]", \.notificationNote),
        .init("notification_trace_id", "text[]", \.notificationTraceId),
        .init("request_env", "text[]", \.requestEnv), .init("request_uuid", "text[]", \.requestUUID),
        .init("request_bundle", "text[]", \.requestBundle), .init("request_transaction", "text[]", \.requestTransaction),
        .init("request_purchase", "text[]", \.requestPurchase), .init("request_reason", "text[]", \.requestReason),
        .init("request_signed_date", "timestamp with time zone[]", moments: \.requestSignedDate),
        .init("request_deadline", "timestamp with time zone[]", moments: \.requestDeadline),
        .init("change_env", "text[]", \.changeEnv), .init("change_customer", "uuid[]", \.changeCustomer),
        .init("change_index", "integer[]", \.changeIndex),
        .init("change_event_head", "text[]", \.changeEventHead), .init("change_event_tail", "text[]", \.changeEventTail),
        .init("change_trace", "text[]", \.changeTrace), .init("change_kind", "text[]", \.changeKind), .init("change_key", "text[]", \.changeKey),
        .init("change_source", "text[]", \.changeSource), .init("change_product", "text[]", \.changeProduct),
        .init("change_active", "boolean[]", \.changeActive), .init("change_until", "timestamp with time zone[]", moments: \.changeUntil),
        .init("change_reason", "text[]", \.changeReason), .init("change_quantity", "integer[]", \.changeQuantity),
        .init("change_cause_key", "text[]", \.changeCauseKey), .init("change_cause_type", "text[]", \.changeCauseType),
        .init("change_cause_subtype", "text[]", \.changeCauseSubtype), .init("change_cause_lookup", "text[]", \.changeCauseLookup),
        .init("change_cause_as_of", "timestamp with time zone[]", moments: \.changeCauseAsOf),
        .init("change_cause_signed_date", "timestamp with time zone[]", moments: \.changeCauseSignedDate),
    ]

    /// `SELECT grant_write($1::text[], …)`: one row, how many changes were numbered.
    static let statement =
        "SELECT grant_write("
        + parameters.enumerated().map { "$\($0.offset + 1)::\($0.element.type)" }.joined(separator: ", ") + ")"

    /// The bindings of ``statement``.
    func bindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: Self.parameters.count)
        for parameter in Self.parameters { try parameter.bind(self, &bindings) }
        return bindings
    }
}

/// `grant_write` as a named prepared statement: postgres-nio prepares it once per connection.
struct GrantWriteStatement: PostgresPreparedStatement {
    typealias Row = Int
    static let name = "appstore.GrantWriteColumns"
    static let sql = GrantWriteColumns.statement
    static let bindingDataTypes = GrantWriteColumns.parameters.map(\.dataType)

    let columns: GrantWriteColumns

    func makeBindings() throws -> PostgresBindings { try columns.bindings() }

    func decodeRow(_ row: PostgresRow) throws -> Int { try row.decode(Int.self) }
}

extension ArrayParameter where Source == GrantWriteColumns {
    init<T: PostgresArrayEncodable & PostgresNonThrowingEncodable>(
        _ name: String, _ type: String, _ column: KeyPath<GrantWriteColumns, [T]> & Sendable
    ) {
        self.init(name, type, values: { $0[keyPath: column] })
    }

    init<T: PostgresArrayEncodable & PostgresNonThrowingEncodable>(
        _ name: String, _ type: String, _ column: KeyPath<GrantWriteColumns, [T?]> & Sendable
    ) {
        self.init(name, type, values: { $0[keyPath: column] })
    }

    init(_ name: String, _ type: String, moments column: KeyPath<GrantWriteColumns, [Date]> & Sendable) {
        self.init(name, type, moments: { $0[keyPath: column] })
    }

    init(_ name: String, _ type: String, moments column: KeyPath<GrantWriteColumns, [Date?]> & Sendable) {
        self.init(name, type, moments: { $0[keyPath: column] })
    }
}
