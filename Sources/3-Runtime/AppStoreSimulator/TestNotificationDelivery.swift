import AppStore
import AppStoreServerAPI
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// Admin body of `GET`/`PUT /sim/webhook`: where the simulator POSTs TEST notifications (`null`: nowhere).
public struct WebhookSetting: Codable, Hashable, Sendable {
    public var url: String?
    public init(url: String?) { self.url = url }
}

extension SimulatorStore {
    /// Where TEST notifications are delivered (`SIM_WEBHOOK_URL` or `PUT /sim/webhook`); nil: nowhere.
    public var webhookURL: String? { state.withLock { $0.webhookURL } }

    /// Sets or clears the webhook; false (and unchanged) when `url` is not an http(s) URL.
    @discardableResult
    public func setWebhookURL(_ url: String?) -> Bool {
        if let url {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else { return false }
        }
        state.withLock { $0.webhookURL = url }
        return true
    }

    /// Appends a delivery attempt to a requested TEST notification (what Get Test Notification Status shows).
    func recordTestSendAttempt(token: String, result: String, at date: Date) {
        state.withLock { $0.testNotifications[token]?.sendAttempts.append(SendAttemptItem(attemptDate: date, sendAttemptResult: result)) }
    }
}

/// Delivers a requested TEST notification like Apple: one POST of `{"signedPayload":…}` to the
/// webhook, the outcome recorded as a send attempt with Apple's result names.
struct TestNotificationDelivery: Sendable {
    let store: SimulatorStore

    /// Starts the delivery in the background (the request answers at once, as Apple's does).
    func deliver(token: String) {
        guard let url = store.webhookURL, let notification = store.state.withLock({ $0.testNotifications[token] }) else { return }
        let store = self.store
        Task {
            let result = await Self.post(signedPayload: notification.signedPayload, to: url)
            store.recordTestSendAttempt(token: token, result: result, at: store.now())
        }
    }

    /// POSTs the body; returns `SUCCESS` or Apple's name for the failure.
    static func post(signedPayload: String, to url: String) async -> String {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        guard let body = try? JSONEncoder().encode(["signedPayload": signedPayload]) else { return "OTHER" }
        request.body = .bytes(ByteBuffer(bytes: Array(body)))
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(5))
            _ = try? await response.body.collect(upTo: 1 << 20)
            return (200..<300).contains(Int(response.status.code)) ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            return "TIMED_OUT"
        } catch {
            return "NO_RESPONSE"
        }
    }
}
