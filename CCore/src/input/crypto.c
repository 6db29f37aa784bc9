#include <libavutil/aes.h>
#include <libavutil/mem.h>
#include <stdint.h>
#include <string.h>

#include "mq_err.h"
#include "mq_player.h"

int mq_aes128_cbc_decrypt(const uint8_t key[16], const uint8_t iv[16], uint8_t *data, size_t size, size_t *out_size)
{
    if (!key || !iv || !data || !out_size || size == 0 || size % 16 != 0 || size / 16 > INT32_MAX)
        return MQ_ERR_INVALID_ARGUMENT;
    struct AVAES *aes = av_aes_alloc();
    if (!aes)
        return MQ_ERR_NO_MEMORY;
    uint8_t chain[16];
    memcpy(chain, iv, sizeof chain); // av_aes_crypt updates the IV it is given
    int ret = av_aes_init(aes, key, 128, 1);
    if (ret == 0)
        av_aes_crypt(aes, data, data, (int)(size / 16), chain, 1);
    av_free(aes);
    if (ret != 0)
        return MQ_ERR_INVALID_ARGUMENT;
    // PKCS#7: the last byte says how many bytes of padding, each of that value.
    uint8_t pad = data[size - 1];
    if (pad == 0 || pad > 16)
        return MQ_ERR_DEMUX;
    for (size_t i = size - pad; i < size; i++)
        if (data[i] != pad)
            return MQ_ERR_DEMUX;
    *out_size = size - pad;
    return MQ_OK;
}
