// tour: the first steps of seed 000 ("Life is short, eat dessert first") line by line, printing
// the same tensors as the PyTorch notebook (docs/tensors.md).
#include <cmath>
#include <iostream>

#include <ag/ag.h>

int main(int argc, char** argv) {
  using namespace ag;
  if (argc > 1) {  // the tour takes no arguments
    std::cerr << argv[0] << ": takes no arguments, got '" << argv[1] << "'\n";
    return 2;
  }
  // The embedded sentence as seed 000 prints it (Embedding's init arrives with the RNG work).
  Tensor embedded_sentence = tensor({{0.3374, -0.1778, -0.3035},
                                     {0.1794, 1.8951, 0.4954},
                                     {0.2692, -0.0770, -1.0205},
                                     {-0.2196, -0.3792, 0.7671},
                                     {-0.5880, 0.3486, 0.6603},
                                     {-1.1925, 0.6984, -1.4097}});

  manual_seed(123);
  Tensor W_query = rand({3, 3}).requires_grad_();
  Tensor W_key = rand({3, 3}).requires_grad_();
  Tensor W_value = rand({3, 3}).requires_grad_();
  std::cout << W_query << "\n";

  Tensor x_2 = embedded_sentence[1];
  Tensor query_2 = matmul(x_2, W_query);
  std::cout << query_2 << "\n";

  Tensor keys = matmul(embedded_sentence, W_key);
  Tensor values = matmul(embedded_sentence, W_value);
  std::cout << "keys.shape: " << keys.shape() << "\n";

  Tensor omega_2 = matmul(query_2, keys.T());
  std::cout << omega_2 << "\n";

  Tensor attention_weights_2 = softmax(omega_2 / std::sqrt(3.0), 0);
  std::cout << attention_weights_2 << "\n";

  Tensor context_vector_2 = matmul(attention_weights_2, values);
  std::cout << context_vector_2 << "\n";

  // and the gradient of the context vector's sum with respect to W_query
  context_vector_2.sum().backward();
  std::cout << W_query.grad() << "\n";
  return 0;
}
