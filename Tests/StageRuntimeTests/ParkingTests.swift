import KafkaClient
import Testing

@testable import StageRuntime

/// The offset a partition may commit while records are parked: never past the lowest one not
/// finished, so a crash or rebalance redoes it (and those after it) instead of losing it.
@Suite("Parked records and the offset a partition commits")
struct ParkingTests {
    typealias Parking = PartitionWorker.Parking

    static func record(_ offset: Int64, key: String) -> KafkaMessage {
        KafkaMessage(topic: "t", partition: 0, offset: offset, key: Array(key.utf8), value: [], headers: [], timestamp: nil)
    }

    @Test("with nothing parked every finished record is committed past; a parked one holds the offset until it ends")
    func offsetStopsAtTheParkedRecord() {
        var parking = Parking(capacity: 10)
        let beforeParking = parking.finished(0)
        #expect(beforeParking == 1)
        parking.park(Self.record(1, key: "S"), history: PartitionWorker.FailureHistory(attempts: 2), due: .now)
        let afterIt = [parking.finished(2), parking.finished(3)]
        #expect(afterIt == [nil, nil], "later records finished: the offset stays at the parked one")
        let sameKey = parking.holdIfBlocked(Self.record(4, key: "S"))
        let otherKey = parking.holdIfBlocked(Self.record(5, key: "B"))
        #expect(sameKey && !otherKey, "only the same key waits behind it")
        let otherFinished = parking.finished(5)
        #expect(otherFinished == nil && parking.count == 2)
        let due = parking.takeDue()
        #expect(due?.records.map(\.offset) == [1, 4] && due?.history.attempts == 2)
        let parkedEnded = parking.finished(1)
        #expect(parkedEnded == 4, "the parked record ended: up to the one held behind it")
        let heldEnded = parking.finished(4)
        #expect(heldEnded == 6, "and past everything finished meanwhile")
        let next = parking.finished(6)
        #expect(parking.isEmpty && next == 7)
    }

    @Test("a record tried again that fails again is parked again; one left unfinished by a stop keeps the offset below it")
    func triedAgain() {
        var parking = Parking(capacity: 10)
        parking.park(Self.record(3, key: "S"), history: .init(attempts: 2), due: .now)
        parking.park(Self.record(5, key: "T"), history: .init(attempts: 2), due: .now + .seconds(3600))
        let later = parking.finished(6)
        let first = parking.takeDue()
        let notDue = parking.takeDue()
        #expect(later == 3, "everything before the lowest parked record is finished: up to it")
        #expect(first?.records.map(\.offset) == [3] && notDue == nil, "only the record whose time came")
        parking.park(Self.record(3, key: "S"), history: .init(attempts: 3), due: .now)
        let parkedAgain = parking.advance()
        #expect(parkedAgain == nil, "still the lowest unfinished")
        _ = parking.takeDue()
        let leftByAStop = parking.advance()
        #expect(leftByAStop == nil, "taken out but not finished (the worker stopped): still unfinished")
        let ended = parking.finished(3)
        #expect(ended == 5, "up to the other parked record")
    }

    @Test("parked and held records are bounded; capacity 0 parks nothing")
    func bounded() {
        var parking = Parking(capacity: 2)
        #expect(parking.canPark)
        parking.park(Self.record(1, key: "S"), history: .init(), due: .now)
        let held = parking.holdIfBlocked(Self.record(2, key: "S"))
        #expect(held && parking.isFull && !parking.canPark)
        let none = Parking(capacity: 0)
        #expect(!none.canPark && !none.isFull)
    }
}
