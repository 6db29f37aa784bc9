import Foundation
import MarqueeStreaming
import NIOCore

extension TrackFeeder {
    /// Where a segment's bytes go as they are handed on: the core's tracks (a transport
    /// stream's first bytes held until its offset is measured from its first PTS), the media
    /// clock's drift sample, the in-band event scanner and the copy kept for the store.
    struct SegmentSink: SegmentDeliverySink {
        let feeder: TrackFeeder
        let segment: SegmentReference
        let rep: Representation
        let url: URL
        /// MPEG-TS whose offset is still to be measured: the first chunks wait until the first
        /// PTS is in them (the offset must be set before the core decodes a frame).
        private var held: ByteBuffer?
        /// Placed already: its first timestamp against its date (a drifting media clock).
        private var unsampled: ByteBuffer?
        private var scanner = EventMessageScanner()
        /// Whether any byte reached the core.
        private(set) var hasDelivered = false
        /// The whole segment, for the store (empty without one).
        private(set) var whole = ByteBuffer()

        init(feeder: TrackFeeder, segment: SegmentReference, rep: Representation, url: URL) {
            (self.feeder, self.segment, self.rep, self.url) = (feeder, segment, rep, url)
            startOver()
        }

        mutating func startOver() {
            held = rep.measuresTimestamps && feeder.offsetPending.withLock({ $0 }) ? ByteBuffer() : nil
            unsampled =
                held == nil && feeder.drift != nil && rep.datedByPackager && rep.measuresTimestamps ? ByteBuffer() : nil
            scanner = EventMessageScanner()
            whole = ByteBuffer()
        }

        /// `probe` with `bytes` after it (the first bytes taken as they are: no copy).
        private static func appending(_ bytes: ByteBuffer, to probe: ByteBuffer) -> ByteBuffer {
            guard probe.readableBytes > 0 else { return bytes }
            var joined = probe
            var copy = bytes
            joined.writeBuffer(&copy)
            return joined
        }

        /// Hands bytes of the segment on, in order.
        mutating func deliver(_ bytes: ByteBuffer) throws(FetchError) {
            var out = bytes
            if let pending = held {
                let waiting = Self.appending(bytes, to: pending)
                let partial = waiting.readableBytes < TrackFeeder.offsetProbeBytes
                guard feeder.measureOffset(waiting, segment: segment, rep: rep, partial: partial) || !partial else {
                    held = waiting
                    return
                }
                held = nil
                out = waiting
            }
            if let sampled = unsampled {
                let probe = Self.appending(out, to: sampled)
                unsampled =
                    feeder.sampleDrift(probe, segment: segment, rep: rep)
                        || probe.readableBytes >= TrackFeeder.offsetProbeBytes ? nil : probe
            }
            do { try feeder.push(out) } catch {
                throw FetchError(.cancelled, url: url.absoluteString, message: "core closed")
            }
            hasDelivered = true
            if feeder.store != nil {
                var copy = bytes
                whole.writeBuffer(&copy)
            }
            let boxes = bytes.withUnsafeReadableBytes { scanner.feed($0) }
            if !boxes.isEmpty { feeder.inbandEvents(boxes, segment: segment) }
        }

        /// The segment is all in: what is still held (a short segment, its pictures' PTS not
        /// found in it) is placed by any PTS it has and goes to the core, which is told the
        /// segment ended. False when the core is closed.
        mutating func finish() -> Bool {
            if let waiting = held, waiting.readableBytes > 0 {
                feeder.measureOffset(waiting, segment: segment, rep: rep)  // (all of it: any PTS it has)
                do { try feeder.push(waiting) } catch { return false }
            }
            do { try feeder.endSegment() } catch { return false }
            feeder.reportRefused(scanner)
            return true
        }
    }
}
