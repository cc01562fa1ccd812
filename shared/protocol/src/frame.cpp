#include "ecsnet/protocol/frame.hpp"

#include <cstring>

namespace ecsnet::protocol {

namespace {

// Client frames hold one small command: a shallow, small tree. Server frames hold whole
// worlds, so their table count scales with the snapshot chunk and delta size.
constexpr flatbuffers::uoffset_t client_max_depth = 8;
constexpr flatbuffers::uoffset_t client_max_tables = 64;
constexpr flatbuffers::uoffset_t server_max_depth = 12;
constexpr flatbuffers::uoffset_t server_max_tables = 1U << 20U;
// The largest FlatBuffers scalar: frames handed out by frame_reader start at such an address.
constexpr std::size_t frame_alignment = 8;

frame copy_out(const flatbuffers::FlatBufferBuilder& fbb) {
    const std::uint8_t* data = fbb.GetBufferPointer();
    return std::make_shared<const std::vector<std::uint8_t>>(data, data + fbb.GetSize());
}

bool check_envelope(std::span<const std::uint8_t> bytes, const char* identifier, std::string* why) {
    const auto fail = [&](const char* reason) {
        if (why != nullptr) {
            *why = reason;
        }
        return false;
    };
    if (bytes.size() < frame_prefix_bytes + 8) {
        return fail("frame shorter than a prefix, a root offset and an identifier");
    }
    if (read_prefix(bytes.first<frame_prefix_bytes>()) != bytes.size() - frame_prefix_bytes) {
        return fail("length prefix does not match the frame size");
    }
    if (!flatbuffers::BufferHasIdentifier(bytes.data(), identifier, true)) {
        return fail("wrong file identifier");
    }
    return true;
}

}  // namespace

frame finish_frame(flatbuffers::FlatBufferBuilder& fbb,
                   flatbuffers::Offset<wire::ClientMessage> root) {
    fbb.FinishSizePrefixed(root, wire::ClientMessageIdentifier());
    return copy_out(fbb);
}

frame finish_frame(flatbuffers::FlatBufferBuilder& fbb,
                   flatbuffers::Offset<wire::ServerMessage> root) {
    fbb.FinishSizePrefixed(root, wire::ServerMessageIdentifier());
    return copy_out(fbb);
}

std::uint32_t read_prefix(std::span<const std::uint8_t, frame_prefix_bytes> prefix) noexcept {
    return static_cast<std::uint32_t>(prefix[0]) | (static_cast<std::uint32_t>(prefix[1]) << 8U) |
           (static_cast<std::uint32_t>(prefix[2]) << 16U) |
           (static_cast<std::uint32_t>(prefix[3]) << 24U);
}

const wire::ClientMessage* verify_client_frame(std::span<const std::uint8_t> bytes,
                                               std::string* why) {
    if (!check_envelope(bytes, wire::ClientMessageIdentifier(), why)) {
        return nullptr;
    }
    flatbuffers::Verifier verifier(bytes.data(), bytes.size(), client_max_depth, client_max_tables);
    if (!wire::VerifySizePrefixedClientMessageBuffer(verifier)) {
        if (why != nullptr) {
            *why = "FlatBuffers verification failed";
        }
        return nullptr;
    }
    const auto* root = wire::GetSizePrefixedClientMessage(bytes.data());
    // The verifier accepts a union tag whose table is absent; every reader would dereference it.
    if (root->body_type() != wire::ClientBody::NONE && root->body() == nullptr) {
        if (why != nullptr) {
            *why = "message type without a body";
        }
        return nullptr;
    }
    return root;
}

const wire::ServerMessage* verify_server_frame(std::span<const std::uint8_t> bytes,
                                               std::string* why) {
    if (!check_envelope(bytes, wire::ServerMessageIdentifier(), why)) {
        return nullptr;
    }
    flatbuffers::Verifier verifier(bytes.data(), bytes.size(), server_max_depth, server_max_tables);
    if (!wire::VerifySizePrefixedServerMessageBuffer(verifier)) {
        if (why != nullptr) {
            *why = "FlatBuffers verification failed";
        }
        return nullptr;
    }
    const auto* root = wire::GetSizePrefixedServerMessage(bytes.data());
    // The verifier accepts a union tag whose table is absent; every reader would dereference it.
    if (root->body_type() != wire::ServerBody::NONE && root->body() == nullptr) {
        if (why != nullptr) {
            *why = "message type without a body";
        }
        return nullptr;
    }
    return root;
}

void frame_reader::feed(std::span<const std::uint8_t> bytes) {
    if (consumed_ != 0 && consumed_ == buffer_.size()) {
        buffer_.clear();
        consumed_ = 0;
    } else if (consumed_ > buffer_.size() / 2) {
        buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(consumed_));
        consumed_ = 0;
    }
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

std::vector<std::vector<std::uint8_t>> frame_reader::detach() {
    std::vector<std::vector<std::uint8_t>> storage;
    storage.push_back(std::move(buffer_));
    storage.push_back(std::move(aligned_));
    const auto& old = storage.front();
    buffer_ =
        std::vector<std::uint8_t>(old.begin() + static_cast<std::ptrdiff_t>(consumed_), old.end());
    consumed_ = 0;
    aligned_ = {};
    return storage;
}

frame_reader::status frame_reader::next(std::span<const std::uint8_t>& out) {
    const std::size_t available = buffer_.size() - consumed_;
    if (available < frame_prefix_bytes) {
        return status::need_more;
    }
    const std::uint32_t word =
        read_prefix(std::span<const std::uint8_t, frame_prefix_bytes>{buffer_.data() + consumed_,
                                                                      frame_prefix_bytes});
    const std::uint32_t length = compact_ && is_compact(word) ? compact_of(word).length : word;
    if (length > max_) {
        return status::oversize;
    }
    if (available < frame_prefix_bytes + length) {
        return status::need_more;
    }
    const std::uint8_t* start = buffer_.data() + consumed_;
    consumed_ += frame_prefix_bytes + length;
    // FlatBuffers reads scalars in place, so a frame must start where an 8-byte scalar may be
    // read (the verifier checks alignment relative to the frame's start only). A frame that
    // follows one of odd length starts anywhere: copy it to an aligned buffer first.
    if (reinterpret_cast<std::uintptr_t>(start) % frame_alignment != 0) {
        aligned_.assign(start, start + frame_prefix_bytes + length);
        start = aligned_.data();
    }
    out = std::span<const std::uint8_t>{start, frame_prefix_bytes + length};
    return status::frame;
}

}  // namespace ecsnet::protocol
