// ChannelOps: channels and their upstream keys as the admin API sees them: the writable fields
// and their checks (the same rules the YAML loader applies), and the JSON shapes, with every
// secret masked. Pure; thread-safe.
#pragma once
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <string>

#include "config/Config.hpp"
#include "store/Store.hpp"

namespace sluice {
class SecretBox;
}

namespace sluice::admin {

// Checks the fields present in `body` and applies them to `channel`; absent fields stay as they
// are. When creating, name, type, base_url and models are required. The settings fields
// (model_map, api_version, rpm, tpm, max_concurrent, key_rpm, key_tpm) go into
// Channel::settings; null removes one. A header sent back in the masked form a response showed
// keeps its stored value, so a client can return what it read without destroying secrets.
// Throws FieldError (admin/Fields.hpp).
// An azure channel's Entra ID fields (tenant_id, client_id, client_secret, token_url) go there
// too; client_secret sealed with `box` (FieldError when it is needed and null).
void applyChannelFields(store::Channel& channel, const boost::json::object& body, bool creating,
                        const SecretBox* box = nullptr);

// A store channel: source "store", header values and client_secret masked (opened with `box`,
// which may be null), `keys` as given.
boost::json::object channelJson(const store::Channel& channel, boost::json::array keys, const SecretBox* box = nullptr);
// A channel of the config file: source "config", id null, read-only, its keys masked.
boost::json::object configChannelJson(const config::ChannelConfig& channel);

// The secret of an upstream key: non-empty, no control characters.
// `channel_type`: the channel's type name; a vertex key is the service-account JSON itself (kept
// compact: its newlines go), checked to parse and to hold an RSA key.
std::string upstreamSecretField(const boost::json::value& v, std::string_view channel_type = {});
std::string upstreamLabelField(const boost::json::value& v);
// The secret of a key of a subscription channel (`kind` "claude" or "chatgpt"): the CLI's
// credential file as a JSON object or its text, checked and kept in the stored form
// (cloud::serializeCredential). Throws FieldError saying what is wrong, never quoting it.
std::string subscriptionSecretField(const boost::json::value& v, std::string_view kind);
// A store channel's subscription kind ("" when it is not a subscription channel).
std::string channelSubscription(const store::Channel& channel);

// `masked` is maskSecret of the decrypted secret, or null when it cannot be decrypted (no
// store.secret_key, or one other than the key was sealed with): `box` may be null.
boost::json::object upstreamKeyJson(const store::UpstreamKey& key, const SecretBox* box);

}  // namespace sluice::admin
