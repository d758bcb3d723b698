// Precompiled header: the heavy, stable headers most translation units use.
#pragma once
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <spdlog/spdlog.h>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>
