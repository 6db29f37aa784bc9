internal import CCore

/// A C core failure: the `mq_err` code and what the core said.
package struct CoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The `mq_err` value (negative).
    package var code: Int32
    package var message: String

    package init(code: Int32, message: String? = nil) {
        self.code = code
        self.message = message ?? String(cString: mq_err_string(code))
    }

    package var description: String { message }

    /// `MQ_ERR_INVALID_ARGUMENT`.
    package var isInvalidArgument: Bool { code == MQ_ERR_INVALID_ARGUMENT.rawValue }
    /// `MQ_ERR_UNSUPPORTED`: unknown output name or codec without a decoder.
    package var isUnsupported: Bool { code == MQ_ERR_UNSUPPORTED.rawValue }
    /// `MQ_ERR_AUDIO_DEVICE` / `MQ_ERR_VIDEO_DEVICE` / `MQ_ERR_IO`: an output failed.
    package var isOutputFailure: Bool {
        code == MQ_ERR_AUDIO_DEVICE.rawValue || code == MQ_ERR_VIDEO_DEVICE.rawValue || code == MQ_ERR_IO.rawValue
    }
    /// `MQ_ERR_NOT_FOUND` on a track's event: its input has no stream of its kind (a file
    /// without sound).
    package var isMissingStream: Bool { code == MQ_ERR_NOT_FOUND.rawValue }
    /// `MQ_ERR_REFUSED`: an input the core will not open (a scheme in a path, a special file, a
    /// format outside what that input may be).
    package var isRefused: Bool { code == MQ_ERR_REFUSED.rawValue }
    /// `MQ_ERR_DEMUX` / `MQ_ERR_DECODE`: the media itself is bad.
    package var isMediaFailure: Bool { code == MQ_ERR_DEMUX.rawValue || code == MQ_ERR_DECODE.rawValue }
}
