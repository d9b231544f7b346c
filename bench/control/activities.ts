/** The controls' activities: they do nothing (answers of about the size of the provider's). */
export async function controlInit(_input: unknown): Promise<{ payment_ref: string; expires_in_seconds: number }> {
  return { payment_ref: 'CTL-0000000000', expires_in_seconds: 300 };
}

export async function controlConfirm(_sealedPin: string): Promise<string> {
  return 'confirmed';
}

export async function controlCreateLink(_input: unknown): Promise<{ payment_ref: string; pay_link: string }> {
  return { payment_ref: 'CTL-0000000000', pay_link: 'http://127.0.0.1:9/pay' };
}
