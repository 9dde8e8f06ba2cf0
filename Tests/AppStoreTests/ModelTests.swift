import AppStore
import Foundation
import TestSupport
import Testing

@Suite("Models: decoding, unknown values and round trips")
struct ModelTests {
    /// The 23 notification types of Apple's reference.
    static let notificationTypes = [
        "SUBSCRIBED", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "OFFER_REDEEMED", "DID_RENEW", "EXPIRED",
        "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "PRICE_INCREASE", "REFUND", "REFUND_DECLINED", "REFUND_REVERSED",
        "CONSUMPTION_REQUEST", "RENEWAL_EXTENDED", "RENEWAL_EXTENSION", "REVOKE", "TEST", "EXTERNAL_PURCHASE_TOKEN",
        "ONE_TIME_CHARGE", "RESCIND_CONSENT", "METADATA_UPDATE", "MIGRATION", "PRICE_CHANGE",
    ]
    /// The 17 subtypes of Apple's libraries plus the 2 documented ones.
    static let subtypes = [
        "INITIAL_BUY", "RESUBSCRIBE", "DOWNGRADE", "UPGRADE", "AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED", "VOLUNTARY",
        "BILLING_RETRY", "PRICE_INCREASE", "GRACE_PERIOD", "PENDING", "ACCEPTED", "BILLING_RECOVERY",
        "PRODUCT_NOT_FOR_SALE",
        "SUMMARY", "FAILURE", "UNREPORTED", "CREATED", "ACTIVE_TOKEN_REMINDER",
    ]

    static func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
        try AppStoreJSON.decoder.decode(type, from: Data(json.utf8))
    }

    static func encode(_ value: some Encodable) throws -> String {
        String(decoding: try AppStoreJSON.encoder.encode(value), as: UTF8.self)
    }

    @Test("every notification type of the reference decodes to a known case", arguments: notificationTypes)
    func notificationType(raw: String) throws {
        let payload = try Self.decode(ResponseBodyV2DecodedPayload.self, #"{"notificationType":"\#(raw)"}"#)
        let type = try #require(payload.notificationType)
        #expect(type.isKnown)
        #expect(type.rawValue == raw)
        #expect(try Self.encode(payload) == #"{"notificationType":"\#(raw)"}"#)
    }

    @Test("every subtype of the reference decodes to a known case", arguments: subtypes)
    func subtype(raw: String) throws {
        let payload = try Self.decode(ResponseBodyV2DecodedPayload.self, #"{"subtype":"\#(raw)"}"#)
        let subtype = try #require(payload.subtype)
        #expect(subtype.isKnown)
        #expect(subtype.rawValue == raw)
    }

    @Test("the known cases are exactly the reference's")
    func knownCases() {
        #expect(NotificationType.knownValues.map(\.rawValue) == Self.notificationTypes)
        #expect(NotificationSubtype.knownValues.map(\.rawValue) == Self.subtypes)
        #expect(
            Set(AppStoreEnvironment.knownValues.map(\.rawValue)) == ["Sandbox", "Production", "Xcode", "LocalTesting"]
        )
        #expect(SubscriptionStatus.knownValues.map(\.rawValue) == [1, 2, 3, 4, 5])
        #expect(ExpirationIntent.knownValues.map(\.rawValue) == [1, 2, 3, 4, 5])
        #expect(OfferType.knownValues.map(\.rawValue) == [1, 2, 3, 4])
        #expect(
            ProductType.knownValues.map(\.rawValue) == [
                "Auto-Renewable Subscription", "Non-Consumable", "Consumable", "Non-Renewing Subscription",
            ]
        )
    }

    @Test("an unknown notification type and subtype decode as unknown and round-trip")
    func unknownNotificationType() throws {
        let json = #"{"notificationType":"SOMETHING_NEW","subtype":"BRAND_NEW","version":"2.0"}"#
        let payload = try Self.decode(ResponseBodyV2DecodedPayload.self, json)
        #expect(payload.notificationType == .unknown("SOMETHING_NEW"))
        #expect(payload.notificationType?.isKnown == false)
        #expect(payload.subtype == .unknown("BRAND_NEW"))
        #expect(
            try Self.encode(payload) == #"{"notificationType":"SOMETHING_NEW","subtype":"BRAND_NEW","version":"2.0"}"#
        )
    }

    @Test("unknown values of every enumeration decode as unknown and round-trip")
    func unknownEnumValues() throws {
        let transactionJSON = """
            {"type":"Super Subscription","inAppOwnershipType":"BORROWED","transactionReason":"GIFT",
            "offerType":9,"offerDiscountType":"HALF_OFF","revocationReason":7,"revocationType":"REFUND_MAGIC",
            "environment":"Staging","billingPlanType":"WEEKLY"}
            """
        let transaction = try Self.decode(JWSTransactionDecodedPayload.self, transactionJSON)
        #expect(transaction.type == .unknown("Super Subscription"))
        #expect(transaction.inAppOwnershipType == .unknown("BORROWED"))
        #expect(transaction.transactionReason == .unknown("GIFT"))
        #expect(transaction.offerType == .unknown(9))
        #expect(transaction.offerDiscountType == .unknown("HALF_OFF"))
        #expect(transaction.revocationReason == .unknown(7))
        #expect(transaction.revocationType == .unknown("REFUND_MAGIC"))
        #expect(transaction.environment == .unknown("Staging"))
        #expect(transaction.billingPlanType == .unknown("WEEKLY"))
        #expect(try transaction.normalized() == transaction)

        let renewal = try Self.decode(
            JWSRenewalInfoDecodedPayload.self,
            #"{"expirationIntent":42,"autoRenewStatus":3,"priceIncreaseStatus":2,"renewalBillingPlanType":"X"}"#
        )
        #expect(renewal.expirationIntent == .unknown(42))
        #expect(renewal.autoRenewStatus == .unknown(3))
        #expect(renewal.priceIncreaseStatus == .unknown(2))
        #expect(
            try Self.encode(renewal)
                == #"{"autoRenewStatus":3,"expirationIntent":42,"priceIncreaseStatus":2,"renewalBillingPlanType":"X"}"#
        )

        let data = try Self.decode(NotificationData.self, #"{"status":9,"consumptionRequestReason":"BORED"}"#)
        #expect(data.status == .unknown(9))
        #expect(data.consumptionRequestReason == .unknown("BORED"))
        let app = try Self.decode(AppTransaction.self, #"{"originalPlatform":"watchOS","receiptType":"Future"}"#)
        #expect(app.originalPlatform == .unknown("watchOS"))
        #expect(app.receiptType == .unknown("Future"))
        let token = try Self.decode(ExternalPurchaseToken.self, #"{"tokenType":"NEW_KIND"}"#)
        #expect(token.tokenType == .unknown("NEW_KIND"))
    }

    @Test("a value of the wrong JSON type fails decoding")
    func wrongType() {
        #expect(throws: DecodingError.self) { try Self.decode(NotificationData.self, #"{"appAppleId":"blue"}"#) }
        #expect(throws: DecodingError.self) { try Self.decode(NotificationData.self, #"{"status":"active"}"#) }
    }

    @Test("unknown keys are ignored")
    func unknownKeys() throws {
        let transaction = try Self.decode(
            JWSTransactionDecodedPayload.self,
            #"{"transactionId":"1","deviceVerification":"abc","#
                + #""deviceVerificationNonce":"88207fd1-7189-48f0-b032-7498f458747c","future":{"a":[1]}}"#
        )
        #expect(transaction.transactionId == "1")
    }

    @Test("dates are milliseconds since 1970, including Xcode's fractional milliseconds")
    func dates() throws {
        let transaction = try Self.decode(
            JWSTransactionDecodedPayload.self,
            #"{"purchaseDate":1698148900123,"signedDate":1697679936049.7297,"originalPurchaseDate":-62135769600000}"#
        )
        #expect(transaction.purchaseDate == Date(timeIntervalSince1970: 1_698_148_900.123))
        #expect(try #require(transaction.signedDate).timeIntervalSince1970 * 1000 > 1_697_679_936_049.7)
        #expect(try #require(transaction.originalPurchaseDate) < Date(timeIntervalSince1970: -62_000_000_000))
        let encoded = try Self.encode(JWSTransactionDecodedPayload(purchaseDate: transaction.purchaseDate))
        #expect(encoded == #"{"purchaseDate":1698148900123}"#)
        #expect(
            AppStoreJSON.milliseconds(since1970: AppStoreJSON.date(milliseconds: 1_698_148_900_123))
                == 1_698_148_900_123
        )
    }

    @Test("Advanced Commerce details are kept verbatim")
    func advancedCommerce() throws {
        let json =
            #"{"advancedCommerceInfo":{"estimatedTax":1500,"items":[{"SKU":"a","price":9990}],"#
            + #""taxRate":"0.15","x":null,"y":1.5,"z":true}}"#
        let transaction = try Self.decode(JWSTransactionDecodedPayload.self, json)
        guard case .object(let info) = transaction.advancedCommerceInfo else {
            Issue.record("advancedCommerceInfo is not an object")
            return
        }
        #expect(info["estimatedTax"] == .integer(1500))
        #expect(info["y"] == .number(1.5))
        #expect(info["x"] == .null)
        #expect(try Self.encode(transaction) == json)
    }

    @Test("a verified notification round-trips through JSON")
    func verifiedNotificationRoundTrip() throws {
        let notification = VerifiedNotification(
            payload: ResponseBodyV2DecodedPayload(
                notificationType: .didRenew,
                subtype: .billingRecovery,
                notificationUUID: "0f6a7b2e-1111-2222-3333-444455556666",
                data: NotificationData(environment: .sandbox, bundleId: "b", status: .active),
                version: "2.0",
                signedDate: Date(timeIntervalSince1970: 1_700_000_000.5)
            ),
            transaction: JWSTransactionDecodedPayload(
                originalTransactionId: "1",
                expiresDate: Date(timeIntervalSince1970: 1_702_000_000),
                type: .autoRenewableSubscription,
                commitmentInfo: TransactionCommitmentInfo(billingPeriodNumber: 1, totalBillingPeriods: 12)
            ),
            renewalInfo: JWSRenewalInfoDecodedPayload(
                autoRenewStatus: .off,
                eligibleWinBackOfferIds: ["w"],
                commitmentInfo: RenewalCommitmentInfo(
                    commitmentAutoRenewStatus: .on,
                    commitmentRenewalBillingPlanType: .monthly
                )
            ),
            environment: .sandbox,
            bundleId: "b",
            appAppleId: 7
        )
        let data = try AppStoreJSON.encoder.encode(notification)
        let decoded = try AppStoreJSON.decoder.decode(VerifiedNotification.self, from: data)
        #expect(decoded == notification)
        #expect(try AppStoreJSON.encoder.encode(decoded) == data)
    }

    @Test(
        "Apple's model fixtures decode with every field",
        .enabled(if: SharedFixtures.hasAppleLibraryData || TestServices.isCI, Comment(rawValue: SharedFixtures.skipReason))
    )
    func appleModelFixtures() throws {
        func load<T: Decodable>(_ type: T.Type, _ name: String) throws -> T {
            let url = try SharedFixtures.require("apple-library-testdata/models/\(name)")
            return try AppStoreJSON.decoder.decode(type, from: Data(contentsOf: url))
        }
        let transaction = try load(JWSTransactionDecodedPayload.self, "signedTransaction.json")
        #expect(transaction.price == 10990)
        #expect(transaction.offerType == .introductoryOffer)
        #expect(transaction.revocationReason == .refundedDueToIssue)
        #expect(transaction.environment == .localTesting)
        #expect(transaction.appAccountToken == UUID(uuidString: "7e3fb20b-4cdb-47cc-936d-99d65f608138"))
        #expect(transaction.commitmentInfo?.totalBillingPeriods == 12)
        #expect(transaction.billingPlanType == .monthly)
        #expect(transaction.advancedCommerceInfo != nil)
        let revoked = try load(JWSTransactionDecodedPayload.self, "signedTransactionWithRevocation.json")
        #expect(revoked.revocationType == .refundProrated)
        #expect(revoked.revocationPercentage == 50000)

        let renewal = try load(JWSRenewalInfoDecodedPayload.self, "signedRenewalInfo.json")
        #expect(renewal.expirationIntent == .customerCancelled)
        #expect(renewal.priceIncreaseStatus == .customerHasNotResponded)
        #expect(renewal.eligibleWinBackOfferIds == ["eligible1", "eligible2"])
        #expect(renewal.commitmentInfo?.commitmentRenewalBillingPlanType == .monthly)

        let app = try load(AppTransaction.self, "appTransaction.json")
        #expect(app.originalPlatform == .iOS)
        #expect(app.versionExternalIdentifier == 512)

        let summary = try load(ResponseBodyV2DecodedPayload.self, "signedSummaryNotification.json")
        #expect(summary.summary?.storefrontCountryCodes == ["CAN", "USA", "MEX"])
        let consumption = try load(ResponseBodyV2DecodedPayload.self, "signedConsumptionRequestNotification.json")
        #expect(consumption.data?.consumptionRequestReason == .unintendedPurchase)
        let token = try load(ResponseBodyV2DecodedPayload.self, "signedExternalPurchaseTokenNotification.json")
        #expect(token.externalPurchaseToken?.derivedEnvironment == .production)
        let sandboxToken = try load(
            ResponseBodyV2DecodedPayload.self,
            "signedExternalPurchaseTokenSandboxNotification.json"
        )
        #expect(sandboxToken.externalPurchaseToken?.derivedEnvironment == .sandbox)
        let rescind = try load(ResponseBodyV2DecodedPayload.self, "signedRescindConsentNotification.json")
        #expect(rescind.appData?.signedAppTransactionInfo != nil)
        for model in [transaction, revoked] {
            #expect(try model.normalized() == model)
        }
    }
}
