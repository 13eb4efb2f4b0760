import torch
import torch.nn as nn


class Model(nn.Module):
    """Recurrent layers of each cell: a two-layer bidirectional batch-first LSTM feeding a
    bidirectional GRU, and a time-major ReLU RNN without biases; the final states are returned too,
    and a linear layer reads the LSTM's last step through a view (through the strides the
    sequence was captured with)."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, 2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, 1, batch_first=True, bidirectional=True)
        self.rnn = nn.RNN(input_size, hidden_size, 2, nonlinearity="relu", bias=False)
        self.fc = nn.Linear(2 * hidden_size, 5)

    def forward(self, x, h0, c0, s):
        out, (h_n, c_n) = self.lstm(x, (h0, c0))
        gru_out, gru_h = self.gru(out)
        rnn_out, _ = self.rnn(s)
        return gru_out, gru_h, h_n, c_n, rnn_out, self.fc(out[:, -1, :]), rnn_out[-1] * 2


def get_inputs():
    return [torch.randn(3, 7, 12), torch.randn(4, 3, 20), torch.randn(4, 3, 20), torch.randn(6, 2, 12)]


def get_init_inputs():
    return [12, 20]
