import Foundation
import KafkaClient
import PipelineRecords

// One builder per record kind: key, headers and body exactly as schemas/headers.md describes them.
// Every producer of a kind uses its builder (a stage, an operator job, a bench), so a record an
// operator job feeds in cannot be told from one a stage wrote.

/// A record of `appstore.notifications.raw.v1`: keyed by the hex SHA-256 of its body.
public enum RawMessage {
    /// - Parameters:
    ///   - body: ``RawRecord/notificationBody(signedPayload:)`` or ``RawRecord/uploadBody(signedTransaction:appAccountToken:userId:authentication:)``.
    ///   - requestID: the HTTP request's id; a fresh one for records no request carried.
    ///   - traceContext: W3C `traceparent` (and `tracestate`) headers, already checked by the caller.
    public static func make(
        body: [UInt8], topic: String = Topics.raw, source: String, ingestedAt: Date = Date(),
        requestID: String = UUID().uuidString.lowercased(), traceContext: [KafkaHeader] = []
    ) -> KafkaOutgoingMessage {
        var headers = [
            KafkaHeader(key: PipelineHeader.source, string: source),
            KafkaHeader(key: PipelineHeader.ingestedAt, string: Timestamp.iso8601(ingestedAt)),
            KafkaHeader(key: PipelineHeader.requestID, string: requestID),
            KafkaHeader(key: PipelineHeader.contentType, string: "application/json"),
            KafkaHeader(key: PipelineHeader.schema, string: Topics.raw),
        ]
        headers.append(contentsOf: traceContext)
        return KafkaOutgoingMessage(topic: topic, key: RawRecord.key(of: body), value: body, headers: headers)
    }
}

/// A record of `appstore.notifications.verified.v1`: keyed `<environment>:<originalTransactionId>`
/// (``VerifiedRecord/key``), so one subscription's events stay on one partition, in order.
public enum VerifiedMessage {
    /// Why a verified record cannot be written: it names neither a transaction nor a notification.
    public struct UnkeyedRecord: Error, CustomStringConvertible {
        public var description: String { "the verified record names neither an originalTransactionId nor a notificationUUID" }
    }

    /// verify's output for `input`, keyed `key` (the record's ``VerifiedRecord/key``, which verify
    /// checked): the input's headers carried (see ``PipelineHeader/carried(from:schema:)``).
    public static func make(
        _ record: VerifiedRecord, key: String, topic: String = Topics.verified, following input: [KafkaHeader]
    )
        throws -> KafkaOutgoingMessage
    {
        KafkaOutgoingMessage(
            topic: topic, key: key, value: try record.encoded(), headers: PipelineHeader.carried(from: input, schema: Topics.verified))
    }

    /// A record no raw record led to (a transaction an operator job fetched from the API): headers
    /// as ingest would write them; the pipeline took it in when the job verified it, so its
    /// `ingested-at` is its `verifiedAt`.
    public static func make(_ record: VerifiedRecord, topic: String = Topics.verified) throws -> KafkaOutgoingMessage {
        let fresh = [
            KafkaHeader(key: PipelineHeader.source, string: record.source),
            KafkaHeader(key: PipelineHeader.ingestedAt, string: Timestamp.iso8601(record.verifiedAt)),
            KafkaHeader(key: PipelineHeader.requestID, string: UUID().uuidString.lowercased()),
        ]
        guard let key = record.key else { throw UnkeyedRecord() }
        return try make(record, key: key, topic: topic, following: fresh)
    }
}

/// A record of `appstore.notifications.enriched.v1`: keyed like the verified record it extends.
public enum EnrichedMessage {
    /// enrich's output for the verified record `input`: same key, the input's headers carried.
    /// With `keys`, the body is signed (``RecordKeys``) so grant can tell it came from enrich.
    public static func make(
        body: [UInt8], key: [UInt8]?, topic: String = Topics.enriched, following input: [KafkaHeader], keys: RecordKeys? = nil
    )
        -> KafkaOutgoingMessage
    {
        var headers = PipelineHeader.carried(from: input, schema: Topics.enriched).filter { $0.key != RecordKeys.header }
        if let keys { headers.append(keys.seal(body)) }
        return KafkaOutgoingMessage(topic: topic, key: key, value: body, headers: headers)
    }

    /// An enriched record written without a verified input (the grant benchmark's replay):
    /// keyed and headed as enrich would write it, taken in by the pipeline at `ingestedAt`.
    public static func make(
        _ record: EnrichedRecord, topic: String = Topics.enriched, ingestedAt: Date, keys: RecordKeys? = nil
    ) throws -> KafkaOutgoingMessage {
        let verified = record.verified
        guard let key = verified.key else { throw VerifiedMessage.UnkeyedRecord() }
        return make(
            body: try record.encoded(), key: Array(key.utf8), topic: topic,
            following: [
                KafkaHeader(key: PipelineHeader.source, string: verified.source),
                KafkaHeader(key: PipelineHeader.ingestedAt, string: Timestamp.iso8601(ingestedAt)),
            ], keys: keys)
    }
}

extension PipelineHeader {
    /// The headers of a record a stage derives from `input` (source, ingested-at, request-id,
    /// traceparent… carried), with `schema` replaced, `content-type` set and any dead-letter headers
    /// of a replayed record dropped. An input written before `ingested-at` had its name carries
    /// `received-at`: it goes on as `ingested-at` (``ingestedAtValue(in:)``), so writers write only
    /// the new name.
    public static func carried(from input: [KafkaHeader], schema: String) -> [KafkaHeader] {
        var ingested = ingestedAtValue(in: input)  // written once, where the input had it
        var headers: [KafkaHeader] = []
        headers.reserveCapacity(input.count + 2)
        for header in input where header.key != PipelineHeader.schema && header.key != PipelineHeader.contentType {
            if header.key.hasPrefix(DeadLetterHeader.prefix) { continue }
            if header.key == PipelineHeader.ingestedAt || header.key == PipelineHeader.legacyIngestedAt {
                if let value = ingested { headers.append(KafkaHeader(key: PipelineHeader.ingestedAt, value: value)) }
                ingested = nil
                continue
            }
            headers.append(header)
        }
        headers.append(KafkaHeader(key: PipelineHeader.contentType, string: "application/json"))
        headers.append(KafkaHeader(key: PipelineHeader.schema, string: schema))
        return headers
    }

    /// The value of `ingested-at`, else of `received-at` (its name before, on records already kept
    /// on a topic: raw is kept 35 days and replays read it). The one place the old name is read.
    public static func ingestedAtValue(in headers: [KafkaHeader]) -> [UInt8]? {
        (headers.last { $0.key == PipelineHeader.ingestedAt } ?? headers.last { $0.key == PipelineHeader.legacyIngestedAt })?.value
    }
}

extension KafkaMessage {
    /// The `ingested-at` header (written by ``RawMessage`` and carried on), when present and
    /// readable: when the pipeline took the record in. A record written before the header had that
    /// name has `received-at` instead, read when `ingested-at` is absent
    /// (``PipelineHeader/ingestedAtValue(in:)``).
    public var ingestedAt: Date? {
        PipelineHeader.ingestedAtValue(in: headers).map { String(decoding: $0, as: UTF8.self) }.flatMap(Timestamp.parse)
    }
}
