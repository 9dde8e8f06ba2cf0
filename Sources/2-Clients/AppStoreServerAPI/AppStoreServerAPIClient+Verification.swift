import AppStore

extension AppStoreServerAPIClient {
    /// Verifies a transaction JWS of an answer and checks it belongs to the app and environment asked about.
    func verifyTransaction(
        _ signed: String, target: Target, endpoint: AppStoreAPIEndpoint
    ) async throws(AppStoreAPIError) -> JWSTransactionDecodedPayload {
        let transaction: JWSTransactionDecodedPayload
        do {
            transaction = try await verifier.verifyTransaction(signed)
        } catch {
            throw untrusted(error, endpoint: endpoint, what: "a transaction")
        }
        guard transaction.bundleId == target.bundleId, transaction.environment == target.environment else {
            throw AppStoreAPIError(
                .untrustedResponse,
                "\(endpoint.rawValue) returned a transaction of \(transaction.bundleId ?? "?")/\(transaction.environment?.rawValue ?? "?") when asked about \(target)",
                endpoint: endpoint.rawValue)
        }
        return transaction
    }

    /// Verifies an app transaction of an answer: the target's app, its `receiptType` the target's environment.
    func verifyAppTransaction(
        _ signed: String, target: Target, endpoint: AppStoreAPIEndpoint
    ) async throws(AppStoreAPIError) -> AppTransaction {
        let app: AppTransaction
        do {
            app = try await verifier.verifyAppTransaction(signed)
        } catch {
            throw untrusted(error, endpoint: endpoint, what: "an app transaction")
        }
        guard app.bundleId == target.bundleId, app.receiptType == target.environment else {
            throw AppStoreAPIError(
                .untrustedResponse,
                "\(endpoint.rawValue) returned an app transaction of \(app.bundleId ?? "?")/\(app.receiptType?.rawValue ?? "?") when asked about \(target)",
                endpoint: endpoint.rawValue)
        }
        return app
    }

    /// Verifies renewal info of an answer (it names no app; its environment must match).
    func verifyRenewalInfo(
        _ signed: String, target: Target, endpoint: AppStoreAPIEndpoint
    ) async throws(AppStoreAPIError) -> JWSRenewalInfoDecodedPayload {
        let renewal: JWSRenewalInfoDecodedPayload
        do {
            renewal = try await verifier.verifyRenewalInfo(signed, bundleId: target.bundleId)
        } catch {
            throw untrusted(error, endpoint: endpoint, what: "renewal info")
        }
        guard renewal.environment == target.environment else {
            throw AppStoreAPIError(
                .untrustedResponse,
                "\(endpoint.rawValue) returned renewal info of \(renewal.environment?.rawValue ?? "?") when asked about \(target)",
                endpoint: endpoint.rawValue)
        }
        return renewal
    }

    /// Verifies a notification of an answer (and its nested JWS).
    func verifyNotification(
        _ signed: String, target: Target, endpoint: AppStoreAPIEndpoint
    ) async throws(AppStoreAPIError) -> VerifiedNotification {
        let notification: VerifiedNotification
        do {
            notification = try await verifier.verifyNotification(signedPayload: signed)
        } catch {
            throw untrusted(error, endpoint: endpoint, what: "a notification")
        }
        guard notification.bundleId == target.bundleId, notification.environment == target.environment else {
            throw AppStoreAPIError(
                .untrustedResponse,
                "\(endpoint.rawValue) returned a notification of \(notification.bundleId)/\(notification.environment.rawValue) when asked about \(target)",
                endpoint: endpoint.rawValue)
        }
        return notification
    }

    /// The answer's own bundle ID and environment, when it states them, must be the ones asked about.
    func checkEnvelope(
        bundleId: String?, environment: AppStoreEnvironment?, target: Target, endpoint: AppStoreAPIEndpoint
    ) throws(AppStoreAPIError) {
        if let bundleId, bundleId != target.bundleId {
            throw AppStoreAPIError(
                .untrustedResponse, "\(endpoint.rawValue) answered for bundle ID \(bundleId), not \(target.bundleId)", endpoint: endpoint.rawValue)
        }
        if let environment, environment != target.environment {
            throw AppStoreAPIError(
                .untrustedResponse, "\(endpoint.rawValue) answered for \(environment.rawValue), not \(target.environment.rawValue)",
                endpoint: endpoint.rawValue)
        }
    }

    private func untrusted(_ error: AppStoreVerificationError, endpoint: AppStoreAPIEndpoint, what: String) -> AppStoreAPIError {
        // A revocation check that could not run may succeed later; everything else will not heal.
        var result = AppStoreAPIError(
            .untrustedResponse, "\(endpoint.rawValue) returned \(what) that failed verification: \(error)", endpoint: endpoint.rawValue)
        if error.isRetryable { result.kind = .unreachable }
        return result
    }
}
