import ArgumentParser
import EnvironmentSettings
import Foundation
import OfferSigning
import PipelineOperations

/// `appstorectl sign-offer`: signs one offer with the app's In-App Purchase key, for support and for
/// trying an offer on a test device before the app's backend asks ingest for signatures.
struct SignOffer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign-offer",
        abstract: "Sign a promotional offer (v1 or JWS) or an introductory offer eligibility override.",
        discussion: """
            TYPE is promotional-offer-v1 (Apple's original signature: prints keyID, nonce, timestamp and \
            signature for SKPaymentDiscount or Product.PurchaseOption.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)), \
            promotional-offer (prints the JWS) or introductory-offer-eligibility (prints the JWS). The key is read from \
            --key-file, else OFFER_SIGNING_KEY_FILE; --key-id, --issuer-id and --bundle-id default to OFFER_SIGNING_KEY_ID, \
            OFFER_SIGNING_ISSUER_ID and the only app of OFFER_SIGNING_APPS. The key itself is never taken from the command line. \
            Exit status: 0 when signed, 1 when the key or a field cannot be used, 2 on bad usage.
            """)

    enum Kind: String, CaseIterable, ExpressibleByArgument {
        case promotionalOfferV1 = "promotional-offer-v1"
        case promotionalOffer = "promotional-offer"
        case introductoryOfferEligibility = "introductory-offer-eligibility"
    }

    @Argument(help: "promotional-offer-v1, promotional-offer or introductory-offer-eligibility.")
    var type: Kind

    @Option(help: "The product identifier.")
    var productId: String

    @Option(help: "The promotional offer's identifier from App Store Connect (promotional offers).")
    var offerId: String?

    @Option(help: "promotional-offer-v1: the customer's appAccountToken the purchase carries (lower-cased in the message); default: none.")
    var appAccountToken = ""

    @Option(help: "Any transaction ID of the customer, or its appTransactionId (JWS; required for introductory-offer-eligibility).")
    var transactionId: String?

    @Option(help: "introductory-offer-eligibility: true to offer the introductory offer, false to withhold it.")
    var allowIntroductoryOffer: Bool?

    @Option(help: "promotional-offer-v1: the nonce (a UUID); default: a fresh one.")
    var nonce: String?

    @Option(help: "promotional-offer-v1: UNIX time in milliseconds; default: now.")
    var timestamp: Int64?

    @Option(help: ArgumentHelp("The .p8 key file (default: OFFER_SIGNING_KEY_FILE).", valueName: "file"))
    var keyFile: String?

    @Option(help: "The key ID (default: OFFER_SIGNING_KEY_ID).")
    var keyId: String?

    @Option(help: "The issuer ID, for the JWS types (default: OFFER_SIGNING_ISSUER_ID).")
    var issuerId: String?

    @Option(help: "The app's bundle ID (default: the only app of OFFER_SIGNING_APPS).")
    var bundleId: String?

    @Flag(help: "Print one JSON object (type, bundleId, keyID, and nonce, timestamp, signature, appAccountToken or jws).")
    var json = false

    /// `sign-offer --json`.
    struct Output: OperatorJSONObject {
        var type: String
        var bundleId: String
        var keyID: String
        var appAccountToken: String?
        var nonce: String?
        var timestamp: Int64?
        var signature: String?
        var jws: String?
    }

    func validate() throws {
        if type != .introductoryOfferEligibility, offerId?.isEmpty != false {
            throw ValidationError("--offer-id is required for \(type.rawValue)")
        }
        if type == .introductoryOfferEligibility {
            guard allowIntroductoryOffer != nil else {
                throw ValidationError("--allow-introductory-offer true|false is required for \(type.rawValue)")
            }
            guard transactionId != nil else { throw ValidationError("--transaction-id is required for \(type.rawValue)") }
        }
        if let transactionId, transactionId.isEmpty || !transactionId.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            throw ValidationError("--transaction-id must be Apple's numeric transaction ID (or appTransactionId)")
        }
        if let nonce, UUID(uuidString: nonce) == nil { throw ValidationError("--nonce must be a UUID (got \(nonce.prefix(40)))") }
        if let timestamp, timestamp <= 0 { throw ValidationError("--timestamp must be positive UNIX milliseconds") }
        if type != .promotionalOfferV1, nonce != nil || timestamp != nil || !appAccountToken.isEmpty {
            throw ValidationError("--nonce, --timestamp and --app-account-token are for promotional-offer-v1 (a JWS has its own nonce and iat)")
        }
        if type == .promotionalOfferV1, transactionId != nil { throw ValidationError("--transaction-id is for the JWS types") }
        _ = try settings()
    }

    /// The key file, key ID, issuer and app: flags first, then the OFFER_SIGNING_* variables.
    private func settings() throws -> (keyFile: String, keyID: String, issuerID: String?, bundleId: String) {
        let env = EnvironmentReader()
        func value(_ flag: String?, _ option: String, _ name: String) throws -> String {
            guard let found = flag ?? env.string(name), !found.isEmpty else { throw ValidationError("\(option) (or \(name)) is required") }
            return found
        }
        let file = try value(keyFile, "--key-file", OfferSigningSettings.keyFile.name)
        let id = try value(keyId, "--key-id", OfferSigningSettings.keyID.name)
        let issuer = type == .promotionalOfferV1 ? nil : try value(issuerId, "--issuer-id", OfferSigningSettings.issuerIDSetting.name)
        let apps = (env.string(OfferSigningSettings.apps.name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        guard let app = bundleId ?? (apps.count == 1 ? apps[0] : nil), !app.isEmpty else {
            throw ValidationError("--bundle-id is required (OFFER_SIGNING_APPS does not name exactly one app)")
        }
        return (file, id, issuer, app)
    }

    func run() throws {
        do {
            let (file, id, issuer, app) = try settings()
            let key = try OfferSigningKey(keyID: id, file: file)
            var output = Output(type: type.rawValue, bundleId: app, keyID: id)
            switch type {
            case .promotionalOfferV1:
                let signed = try PromotionalOfferSigner(bundleId: app, key: key).sign(
                    productIdentifier: productId, offerIdentifier: offerId ?? "", appAccountToken: appAccountToken,
                    nonce: nonce.flatMap(UUID.init(uuidString:)) ?? UUID(),
                    timestamp: timestamp ?? Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
                output.appAccountToken = appAccountToken.lowercased()
                output.nonce = signed.nonce.uuidString.lowercased()
                output.timestamp = signed.timestamp
                output.signature = signed.signature
            case .promotionalOffer:
                output.jws = try OfferJWSSigner(bundleId: app, issuerID: issuer ?? "", key: key).promotionalOffer(
                    productId: productId, offerIdentifier: offerId ?? "", transactionId: transactionId)
            case .introductoryOfferEligibility:
                output.jws = try OfferJWSSigner(bundleId: app, issuerID: issuer ?? "", key: key).introductoryOfferEligibility(
                    productId: productId, allowIntroductoryOffer: allowIntroductoryOffer ?? false, transactionId: transactionId ?? "")
            }
            if json {
                OperatorEnvironment.printJSON(output)
            } else if let jws = output.jws {
                print(jws)
            } else {
                print("keyID: \(id)")
                print("nonce: \(output.nonce ?? "")")
                print("timestamp: \(output.timestamp ?? 0)")
                print("signature: \(output.signature ?? "")")
                print("appAccountToken: \(output.appAccountToken ?? "")")
            }
        } catch let error as ValidationError {
            throw error
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
