import torch
import torch.nn as nn


class Model(nn.Module):
    """Stacked unidirectional layers, each stack one scan whose lanes run side by side: a
    four-layer batch-first LSTM whose final states are returned, a three-layer time-major GRU
    started from zeros, and a ten-layer tanh RNN (more layers than one scan takes: two scans)."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, 4, batch_first=True)
        self.gru = nn.GRU(hidden_size, hidden_size, 3)
        self.rnn = nn.RNN(input_size, hidden_size, 10)

    def forward(self, x, h0, c0, s):
        out, (h_n, c_n) = self.lstm(x, (h0, c0))
        gru_out, gru_h = self.gru(out.transpose(0, 1))
        rnn_out, rnn_h = self.rnn(s)
        return out, h_n, c_n, gru_out, gru_h, rnn_out, rnn_h


def get_inputs():
    return [torch.randn(3, 6, 12), torch.randn(4, 3, 20), torch.randn(4, 3, 20), torch.randn(5, 2, 12)]


def get_init_inputs():
    return [12, 20]
