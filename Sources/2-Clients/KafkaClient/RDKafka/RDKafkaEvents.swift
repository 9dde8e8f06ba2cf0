import CRdKafka
import Foundation
import LogKeys
import Logging

/// Turns librdkafka's LOG and ERROR events into swift-log records, and reads consumed messages.
enum RDKafkaEvents {
    static func log(_ event: OpaquePointer, logger: Logger) {
        var facility: UnsafePointer<CChar>?
        var text: UnsafePointer<CChar>?
        var level: Int32 = 0
        guard rd_kafka_event_log(event, &facility, &text, &level) == 0 else { return }
        let message = text.map { String(cString: $0) } ?? ""
        let source = facility.map { String(cString: $0) } ?? "rdkafka"
        // syslog levels. librdkafka logs passing connection failures at 3 (error) and recovers by
        // itself, so they are warnings here; typed errors reach callers separately.
        let swiftLevel: Logger.Level =
            switch level {
            case ...2: .error
            case 3: .warning
            case 4: .notice
            case 5, 6: .info
            default: .debug
            }
        logger.log(level: swiftLevel, "\(message)", metadata: [LogKey.kafkaFacility: "\(source)"], source: "librdkafka")
    }

    static func error(_ event: OpaquePointer) -> (code: rd_kafka_resp_err_t, reason: String, fatal: Bool) {
        let reason = rd_kafka_event_error_string(event).map { String(cString: $0) } ?? "unknown"
        return (rd_kafka_event_error(event), reason, rd_kafka_event_error_is_fatal(event) != 0)
    }

    /// Copies a consumed librdkafka message into Swift values.
    static func message(_ m: UnsafeMutablePointer<rd_kafka_message_t>) -> KafkaMessage {
        let msg = m.pointee
        let topic = String(cString: rd_kafka_topic_name(msg.rkt))
        let value: [UInt8] =
            msg.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: msg.len)) } ?? []
        let key: [UInt8]? = msg.key.map { Array(UnsafeRawBufferPointer(start: $0, count: msg.key_len)) }
        var headers: [KafkaHeader] = []
        var hdrs: OpaquePointer?
        if rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR, let hdrs {
            var index = 0
            var name: UnsafePointer<CChar>?
            var val: UnsafeRawPointer?
            var size = 0
            while rd_kafka_header_get_all(hdrs, index, &name, &val, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                let bytes = val.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }
                headers.append(KafkaHeader(key: name.map { String(cString: $0) } ?? "", value: bytes))
                index += 1
            }
        }
        var tsType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let ts = rd_kafka_message_timestamp(m, &tsType)
        return KafkaMessage(
            topic: topic, partition: msg.partition, offset: msg.offset, key: key, value: value, headers: headers,
            timestamp: ts >= 0 ? .init(timeIntervalSince1970: Double(ts) / 1000) : nil
        )
    }
}
