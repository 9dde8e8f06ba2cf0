import Foundation
import KafkaClient
import PipelineRecords

/// A dead letter as `appstorectl dlq … --json` prints it (field names documented in deploy/README.md).
public struct DeadLetterEntry: Sendable, Hashable, Encodable {
    public var partition: Int32
    public var offset: Int64
    public var code: String
    public var reason: String
    public var stage: String?
    public var attempts: Int
    public var firstFailureAt: String?
    public var lastFailureAt: String?
    /// `topic[partition]@offset` of the original record.
    public var source: String
    public var sourceTopic: String?
    public var replayed: Bool
    public var key: String?
    /// Every header (only for `dlq show`).
    public var headers: [String: String]?
    /// The body as UTF-8 text (only for `dlq show`).
    public var body: String?

    public init(_ letter: DeadLetter, full: Bool = false) {
        let headers = letter.message.headers
        partition = letter.message.partition
        offset = letter.message.offset
        code = letter.code
        reason = letter.reason
        stage = headers.string(DeadLetterHeader.stage)
        attempts = letter.attempts
        firstFailureAt = headers.string(DeadLetterHeader.firstFailureAt)
        lastFailureAt = headers.string(DeadLetterHeader.lastFailureAt)
        source = letter.source
        sourceTopic = letter.sourceTopic
        replayed = letter.replayed
        key = letter.message.keyString
        if full {
            var all: [String: String] = [:]
            for header in headers { all[header.key] = header.stringValue ?? "" }
            self.headers = all
            body = String(decoding: letter.message.value, as: UTF8.self)
        }
    }

    enum CodingKeys: String, CodingKey {
        case partition, offset, code, reason, stage, attempts, firstFailureAt, lastFailureAt, source, sourceTopic, replayed, key, headers, body
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(partition, forKey: .partition)
        try c.encode(offset, forKey: .offset)
        try c.encode(code, forKey: .code)
        try c.encode(reason, forKey: .reason)
        try c.encodeAlways(stage, forKey: .stage)
        try c.encode(attempts, forKey: .attempts)
        try c.encodeAlways(firstFailureAt, forKey: .firstFailureAt)
        try c.encodeAlways(lastFailureAt, forKey: .lastFailureAt)
        try c.encode(source, forKey: .source)
        try c.encodeAlways(sourceTopic, forKey: .sourceTopic)
        try c.encode(replayed, forKey: .replayed)
        try c.encodeAlways(key, forKey: .key)
        if let headers { try c.encode(headers, forKey: .headers) }
        if let body { try c.encode(body, forKey: .body) }
    }
}

/// Dead letters per error code: how many, and how many no replay took yet.
public struct DeadLetterCount: Sendable, Hashable, Codable {
    public var code: String
    public var total: Int
    public var notReplayed: Int

    public init(code: String, total: Int, notReplayed: Int) {
        self.code = code
        self.total = total
        self.notReplayed = notReplayed
    }

    /// One entry per code, sorted by code.
    public static func of(_ letters: [DeadLetter]) -> [DeadLetterCount] {
        adding(letters, to: [])
    }

    /// `counts` with `letters` counted in: pages of a queue read one after the other add up to the
    /// counts of the whole queue.
    public static func adding(_ letters: [DeadLetter], to counts: [DeadLetterCount]) -> [DeadLetterCount] {
        var byCode = Dictionary(uniqueKeysWithValues: counts.map { ($0.code, $0) })
        for letter in letters {
            var count = byCode[letter.code] ?? DeadLetterCount(code: letter.code, total: 0, notReplayed: 0)
            count.total += 1
            if !letter.replayed { count.notReplayed += 1 }
            byCode[letter.code] = count
        }
        return byCode.values.sorted { $0.code < $1.code }
    }
}
