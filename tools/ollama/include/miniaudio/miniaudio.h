/*
 * Stand-in for miniaudio.h, which the github.com/ollama/ollama module zip
 * does not carry (llama.cpp's vendor/ directory is left out of it). It
 * declares only what llama.cpp's mtmd-helper.cpp calls to decode audio
 * input, and every call fails, so an ollama built with it reports audio
 * input as unreadable instead of decoding it. joule's tests never send
 * audio. mtmd-helper.cpp defines MA_API as static before including this
 * file, so these definitions stay private to that translation unit.
 */
#ifndef JOULE_MINIAUDIO_STUB_H
#define JOULE_MINIAUDIO_STUB_H

#include <stddef.h>

#ifndef MA_API
#define MA_API static
#endif

typedef unsigned long long ma_uint64;
typedef unsigned int ma_uint32;
typedef int ma_result;

#define MA_SUCCESS 0
#define MA_NOT_IMPLEMENTED (-29)

typedef enum { ma_format_unknown = 0, ma_format_f32 = 5 } ma_format;

typedef struct {
    ma_format format;
    ma_uint32 channels;
    ma_uint32 sampleRate;
} ma_decoder_config;

typedef struct {
    int unused;
} ma_decoder;

MA_API ma_decoder_config ma_decoder_config_init(ma_format outputFormat, ma_uint32 outputChannels, ma_uint32 outputSampleRate) {
    ma_decoder_config config;
    config.format = outputFormat;
    config.channels = outputChannels;
    config.sampleRate = outputSampleRate;
    return config;
}

MA_API ma_result ma_decoder_init_memory(const void* pData, size_t dataSize, const ma_decoder_config* pConfig, ma_decoder* pDecoder) {
    (void)pData; (void)dataSize; (void)pConfig; (void)pDecoder;
    return MA_NOT_IMPLEMENTED;
}

MA_API ma_result ma_decoder_get_length_in_pcm_frames(ma_decoder* pDecoder, ma_uint64* pLength) {
    (void)pDecoder;
    if (pLength) *pLength = 0;
    return MA_NOT_IMPLEMENTED;
}

MA_API ma_result ma_decoder_read_pcm_frames(ma_decoder* pDecoder, void* pFramesOut, ma_uint64 frameCount, ma_uint64* pFramesRead) {
    (void)pDecoder; (void)pFramesOut; (void)frameCount;
    if (pFramesRead) *pFramesRead = 0;
    return MA_NOT_IMPLEMENTED;
}

MA_API ma_result ma_decoder_uninit(ma_decoder* pDecoder) {
    (void)pDecoder;
    return MA_SUCCESS;
}

#endif
