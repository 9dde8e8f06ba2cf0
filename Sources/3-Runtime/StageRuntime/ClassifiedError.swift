import ErrorClassification
import Foundation
import KafkaClient

/// How the runtime sees any error: classified errors speak for themselves, Kafka errors are
/// transient when librdkafka says they are retriable, and anything else is permanent.
public struct FailureClassification: Sendable {
    /// The error's `<area>.<reason>` code (schemas/headers.md).
    public let code: String
    public let message: String
    public let isTransient: Bool
    public let retryAfter: Duration?
    /// The record waits for something only it, or its kind, needs and is not failing (``ClassifiedError/isDeferral``).
    public private(set) var isDeferral = false

    private init(code: String, message: String, isTransient: Bool, retryAfter: Duration?) {
        (self.code, self.message, self.isTransient, self.retryAfter) = (code, message, isTransient, retryAfter)
    }

    /// This transient failure as dead-lettered once the retry cap is reached: its own code, the
    /// cap in the message.
    func capped(attempts: Int, over elapsed: Duration) -> FailureClassification {
        FailureClassification(
            code: code,
            message: "retry cap reached after \(attempts) attempts over \(elapsed.components.seconds) s while other records succeeded: \(message)",
            isTransient: false, retryAfter: nil)
    }

    public init(_ error: any Error) {
        switch error {
        case let e as any ClassifiedError:
            (code, message, isTransient, retryAfter) = (e.code.rawValue, e.message, e.isTransient, e.retryAfter)
            isDeferral = e.isTransient && e.isDeferral
        case let e as KafkaError:
            (code, message, isTransient, retryAfter) = (e.code.rawValue, e.reason, e.isRetriable || e.code == .closed, nil)
        case is DecodingError:
            (code, message, isTransient, retryAfter) = (
                StageError.Code.malformedRecord.rawValue, "the record could not be decoded: \(error)", false, nil
            )
        default:
            (code, message, isTransient, retryAfter) = (StageError.Code.unclassified.rawValue, String(describing: error), false, nil)
        }
    }
}
